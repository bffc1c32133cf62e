#!lua
-- statstube: counts of one tube partition.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube
-- Returns: {} when the tag does not know the tube, else
-- { urgent, ready, reserved, delayed, buried, total, deletes, pauses, pause ms, pause left ms, created µs,
--   reserves, buries, timeouts, limit holds, limits ("" for none; see tubelimit.lua),
--   groups, their ready jobs, their reserved jobs, cancels }
-- (for a tube that does not exist but has groups, zeros but for the limits
-- and the groups)
local tube = ARGV[2]
local T, us, now = open_tube(tube)
flush(T)
local created = redis.call('ZSCORE', KEYS[3], tube)
-- A tube's groups (docs/tube-limits.md, "Groups"): how many exist, their
-- ready jobs (the first 1000 groups in turn counted) and reserved jobs, and
-- the holds counted while the tube itself did not exist.
local groups, gready, greserved, gholds = 0, 0, 0, 0
if not T.fam and (T.hasfam or not created) then
  groups = redis.call('HLEN', fam_key('gm', tube))
  if groups > 0 then
    local g = redis.call('HMGET', KEYS[1], 'gr:' .. tube, 'gh:' .. tube)
    greserved, gholds = tonumber(g[1] or '0'), tonumber(g[2] or '0')
    for _, name in ipairs(redis.call('ZRANGE', fam_key('g', tube), 0, 999)) do
      if name ~= tube then
        gready = gready + redis.call('ZCARD', tubekeys_of(name).r)
      end
    end
  end
end
if not created then
  if groups == 0 then return {} end
  local lim = redis.call('HGET', KEYS[1], 'l:' .. tube) or ''
  return { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, gholds, lim, groups, gready, greserved, 0 }
end
local h = redis.call('HMGET', T.t, 'pauses', 'pl', 'rs', 'bu', 'to', 'lh', 'cn')
local pl, left = 0, 0
local pu = paused_until(T, now)
if pu then
  pl = tonumber(h[2] or '0')
  left = pu - now
end
return { redis.call('ZCOUNT', T.r, 0, 1023), redis.call('ZCARD', T.r), redis.call('ZCARD', T.x),
  redis.call('ZCARD', T.d), redis.call('ZCARD', T.b), T.total, T.deletes,
  tonumber(h[1] or '0'), pl, left, tonumber(created),
  tonumber(h[3] or '0'), tonumber(h[4] or '0'), tonumber(h[5] or '0'), tonumber(h[6] or '0') + gholds, T.lim or '',
  groups, gready, greserved, tonumber(h[7] or '0') }
