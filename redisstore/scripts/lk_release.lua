#!lua
-- Release: end token's lease and wake the waiters.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, wake-up channel (a shard channel in the keys' slot)
-- Returns 1, or 0 when token holds no live lease.
local m, h, q, qe = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = lk_now(ARGV[1])
local _, queued = lk_prune(h, q, qe, now)
if redis.call('ZREM', h, ARGV[2]) == 0 then return 0 end
redis.call('SPUBLISH', ARGV[3], 'r')
lk_retain(m, h, q, qe, now, nil, queued > 0)
return 1
