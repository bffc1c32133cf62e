#!lua flags=no-writes
-- lapsed: the sessions whose lease has ended.
-- KEYS: sessions
-- ARGV: now
-- Returns: their names.
local now = math.floor(redis_us() / 1000)
return redis.call('ZRANGE', KEYS[1], '-inf', now, 'BYSCORE', 'LIMIT', 0, 100)
