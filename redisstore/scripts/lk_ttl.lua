#!lua
-- TTL: what is left of token's lease. Reads only.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token
-- Returns the time left (µs), or -1 when token holds no live lease.
local now = lk_now(ARGV[1])
local until_ = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not until_ or tonumber(until_) <= now then return -1 end
return tonumber(until_) - now
