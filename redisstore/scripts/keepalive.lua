#!lua
-- keepalive: starts or renews a session's lease.
-- KEYS: sessions (sorted set: session -> lease end, ms)
-- ARGV: now, session, lease ms
-- Returns: 1
local now = math.floor(redis_us() / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return 1
