#!lua
-- Leave: take token out of the queue of waiters and wake the others.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token
-- Returns 1 when token was queued, else 0. With nobody in line, h may be
-- in the one-holder form and nothing is touched.
local m, h, q, qe = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', q) == 0 then return 0 end
local now = lk_now(ARGV[1])
lk_widen(m, h, now)
lk_prune(h, q, qe, now)
redis.call('ZREM', qe, ARGV[2])
if redis.call('ZREM', q, ARGV[2]) == 0 then return 0 end
redis.call('SPUBLISH', lk_wake(h), 'l')
lk_retain(m, h, q, qe, now, nil, true)
return 1
