#!lua
-- pause: pauses one tube partition for d ms (0 ends a pause), counting a pause.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, d ms
-- Returns: 1
local us = clock(true)
local now = math.floor(us / 1000)
local T = tubekeys(1)
local tube, d = ARGV[2], tonumber(ARGV[3])
tick(T, tube, now)
register(T, tube, us)
redis.call('HINCRBY', T.t, 'pauses', 1)
if d > 0 then
  redis.call('HSET', T.t, 'pu', now + d, 'pl', d)
else
  redis.call('HDEL', T.t, 'pu', 'pl')
  gc(T, tube, now)
end
wake(T)
return 1
