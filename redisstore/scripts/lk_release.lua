#!lua
-- Release: end token's lease and wake the waiters.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, wake-up channel (a shard channel in the keys' slot)
-- Returns 1, or 0 when token holds no live lease.
--
-- It touches only the holder's entry: the keys keep the expiry the grant
-- gave them (the end of this lease at the latest, plus a second), ended
-- leases and lapsed places of others are dropped by the next acquire, and
-- the fence stays whatever it is. An uncontended release is four calls.
local h = KEYS[2]
local now = lk_now(ARGV[1])
local lease = redis.call('ZSCORE', h, ARGV[2])
if not lease then return 0 end
redis.call('ZREM', h, ARGV[2])
if tonumber(lease) <= now then return 0 end
redis.call('SPUBLISH', ARGV[3], 'r')
return 1
