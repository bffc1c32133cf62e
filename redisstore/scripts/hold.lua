#!lua
-- hold: adds n references of a session to one tube partition, or takes
-- back -n of them (never more than the session holds). A tube lives while
-- it holds a job or a reference; when its last reference goes and it holds
-- no job, it is gone, its pause with it.
-- KEYS: m j tubes, then the 6 keys of the tube, then the session's
--       references on this tag (hash: tube name -> count)
-- ARGV: now, tube, n
-- Returns: the references the session holds to the tube partition after the call
local T = tubekeys(1)
local rk = KEYS[10]
local tube, n = ARGV[2], tonumber(ARGV[3])
local us, now = open({ T })
tick(T, tube, now)
local had = tonumber(redis.call('HGET', rk, tube) or '0')
if n < -had then
  n = -had
end
if n == 0 then
  return done(T, had)
end
if n > 0 then
  register(T, tube, us)
end
if had + n > 0 then
  redis.call('HSET', rk, tube, had + n)
else
  redis.call('HDEL', rk, tube)
end
local rf = T.rf + n
set(T, 'rf', rf > 0 and rf or false)
T.rf = rf
if rf == 0 then
  free(T, tube, now)
end
return done(T, had + n)
