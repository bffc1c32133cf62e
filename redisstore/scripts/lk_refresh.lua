#!lua
-- Refresh: make token's lease end a lease from now.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, lease (µs)
-- Returns 1, or 0 when token holds no live lease.
local m, h, q, qe = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = lk_now(ARGV[1])
local _, queued = lk_prune(h, q, qe, now)
if not redis.call('ZSCORE', h, ARGV[2]) then return 0 end
redis.call('ZADD', h, 'XX', now + tonumber(ARGV[3]), ARGV[2])
lk_retain(m, h, q, qe, now, nil, queued > 0)
return 1
