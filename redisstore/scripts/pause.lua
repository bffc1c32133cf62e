#!lua
-- pause: pauses one tube partition for d ms (0 ends a pause), counting a pause.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, d ms
-- Returns: 1
local tube, d = ARGV[2], tonumber(ARGV[3])
local T, us, now = open_tube(tube)
register(T, tube, us)
if d > 0 then
  set(T, 'pu', now + d)
  set(T, 'pl', d)
  schedule(T, now + d)
else
  set(T, 'pu', false)
  set(T, 'pl', false)
  T.pu = nil
end
flush(T)
redis.call('HINCRBY', T.t, 'pauses', 1)
gc(T, tube, now)
wake(T)
return 1
