#!lua
-- Leave: take token out of the queue of waiters and wake the others.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, wake-up channel
-- Returns 1 when token was queued, else 0.
local m, h, q, qe = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = lk_now(ARGV[1])
lk_prune(h, q, qe, now)
redis.call('ZREM', qe, ARGV[2])
if redis.call('ZREM', q, ARGV[2]) == 0 then return 0 end
redis.call('SPUBLISH', ARGV[3], 'l')
lk_retain(m, h, q, qe, now, nil, true)
return 1
