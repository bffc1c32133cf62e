#!lua
-- convert: converts up to a chunk of one tag's jobs from layout 2 to
-- layout 3 (hourglass migrate; see lib.lua and docs/redis-data-model.md).
-- A layout 2 job was one value, its record (tube number, priority, state,
-- delay, TTR, put, reserves, timeouts, releases, buries, kicks, owner,
-- unique key, then its history: the times of its last reserve, release,
-- error, the last error, bury, timeout, kick) and body, rewritten at every
-- transition. It becomes its record (the priority and delay it has now),
-- its past when it has one, and its reservation when it is reserved. A
-- value already of layout 3 (5 fields, or 6 with a unique key last) is
-- left alone, so a conversion cut short is finished by running it again.
-- KEYS: m j
-- ARGV: now (unused), HSCAN cursor, count
-- Returns: { next cursor ("0": done), jobs converted }
local r = redis.call('HSCAN', KEYS[2], ARGV[2], 'COUNT', ARGV[3])
local flat = r[2]
local hset, n = {}, 0
for k = 1, #flat, 2 do
  local idh, v = flat[k], flat[k + 1]
  local c = string.sub(idh, 1, 1)
  if c ~= 'p' and c ~= 'o' then
    local a, body = cmsgpack.unpack(v)
    if #a >= 6 and type(a[6]) == 'number' then
      local old = { 0, 0, 0, 0, 0, '', '', -1, -1, -1, '', -1, -1, -1 } -- fields 7..20 by default
      for i = 7, 20 do
        if a[i] ~= nil then
          old[i - 6] = a[i]
        end
      end
      local reserves, timeouts, releases, buries, kicks, owner, ukey = old[1], old[2], old[3], old[4], old[5], old[6], old[7]
      local reserved = a[3] == RESERVED
      local rec = { a[1], a[2], nil, a[4], a[5], a[6], reserves, timeouts, releases, buries, kicks, owner, ukey,
        old[8], old[9], old[10], old[11], old[12], old[13], old[14] }
      rec.hpri, rec.hdelay, rec.preserved = a[2], a[4], -1
      if reserved then
        rec[F_STATE] = RESERVED
      else
        rec[F_STATE] = READY -- any state but reserved: only o depends on it
      end
      hset[#hset + 1] = idh
      hset[#hset + 1] = pack_job(a[1], a[2], a[4], a[5], a[6], ukey, body)
      local pv = past_of(rec)
      if pv then
        hset[#hset + 1] = 'p' .. idh
        hset[#hset + 1] = pv
      end
      if reserved then
        hset[#hset + 1] = 'o' .. idh
        hset[#hset + 1] = rec[F_RESERVED_AT] .. ':' .. owner
      end
      n = n + 1
    end
  end
end
if #hset > 0 then
  redis.call('HSET', KEYS[2], unpack(hset))
end
return { r[1], n }
