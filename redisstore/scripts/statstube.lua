#!lua
-- statstube: counts of one tube partition.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube
-- Returns: {} when the tag does not know the tube, else
-- { urgent, ready, reserved, delayed, buried, total, deletes, pauses, pause ms, pause left ms, created µs,
--   reserves, buries, timeouts, limit holds, limits ("" for none; see limit.lua) }
local T = tubekeys(1)
local tube = ARGV[2]
local us, now = open({ T })
tick(T, tube, now)
flush(T)
local created = redis.call('ZSCORE', KEYS[3], tube)
if not created then return {} end
local h = redis.call('HMGET', T.t, 'pauses', 'pl', 'rs', 'bu', 'to', 'lh')
local pl, left = 0, 0
local pu = paused_until(T, now)
if pu then
  pl = tonumber(h[2] or '0')
  left = pu - now
end
return { redis.call('ZCOUNT', T.r, 0, 1023), redis.call('ZCARD', T.r), redis.call('ZCARD', T.x),
  redis.call('ZCARD', T.d), redis.call('ZCARD', T.b), T.total, T.deletes,
  tonumber(h[1] or '0'), pl, left, tonumber(created),
  tonumber(h[3] or '0'), tonumber(h[4] or '0'), tonumber(h[5] or '0'), tonumber(h[6] or '0'), T.lim or '' }
