#!lua
-- dropkept: drops the kept jobs of one tag whose time has come (see "Kept
-- jobs" in lib.lua), at most DROP_LIMIT a call, and frees the tubes that
-- then hold nothing.
-- KEYS: m j tubes, the tag's index of tubes with kept jobs (kt)
-- ARGV: now
-- Returns: { jobs dropped, the time (ms) of the tag's next drop, or -1 for
-- none, the time (ms) it went by }
local DROP_LIMIT = 1000
local kt = KEYS[4]
local now = math.floor(redis_us() / 1000)
local left = DROP_LIMIT
local dropped = 0
local due = redis.call('ZRANGE', kt, '-inf', now, 'BYSCORE', 'LIMIT', 0, 100)
for _, tube in ipairs(due) do
  local T = tubekeys_of(tube)
  local _, tnow = open({ T })
  local ids = redis.call('ZRANGE', T.t .. ':k', '-inf', tnow, 'BYSCORE', 'LIMIT', 0, left)
  if #ids > 0 then
    local recs = redis.call('HMGET', KEYS[2], unpack(ids))
    local fields = {}
    for i, idh in ipairs(ids) do
      if recs[i] then
        local h = cmsgpack.unpack(recs[i])
        local ukey = h[6]
        local held = ukey and ukey ~= '' and redis.call('HGET', T.u, ukey)
        if held and string.sub(held, 1, 15) == idh .. 'k' then
          redis.call('HDEL', T.u, ukey)
        end
      end
      fields[#fields + 1] = idh
      fields[#fields + 1] = 'p' .. idh
      fields[#fields + 1] = 'f' .. idh
      fields[#fields + 1] = 'e' .. idh
    end
    redis.call('HDEL', KEYS[2], unpack(fields))
    redis.call('ZREM', T.t .. ':k', unpack(ids))
    set(T, 'kn', math.max(T.kn - #ids, 0))
    dropped = dropped + #ids
    left = left - #ids
  end
  local h = head_score(T.t .. ':k')
  if h then
    redis.call('ZADD', kt, h, tube)
  else
    redis.call('ZREM', kt, tube)
  end
  if T.kn == 0 then
    set(T, 'kn', false)
    T.kn = 0
  end
  if T.ix then
    gc(T, tube, tnow)
    flush(T)
  end
  if left <= 0 then
    break
  end
end
return { dropped, head_score(kt) or -1, now }
