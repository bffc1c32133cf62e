#!lua
-- Release: end token's lease and wake the waiters.
-- KEYS: h (see lk_lib.lua)
-- ARGV: now, token
-- Returns 1, or 0 when token holds no live lease.
--
-- The wake-up goes to the shard channel beside h (lk_wake). In the
-- one-holder form it is sent only while refused acquires may wait (then h
-- stays, free, keeping that for the next grant); otherwise the key is
-- deleted, unless its fence is not behind the clock yet (then it stays,
-- free, keeping the fence until its expiry): the clock, the form, the
-- read and the delete. In the general form the release touches only
-- the holder's entry: the keys keep the expiry the grant gave them, ended
-- leases and lapsed places of others are dropped by the next acquire, and
-- the fence stays whatever it is.
local h, token = KEYS[1], ARGV[2]
local now = lk_now(ARGV[1])
local t = lk_form(h)
if t == 'string' then
  local v = redis.call('GET', h)
  if lk_token(v) ~= token then return 0 end
  local f, e, w = lk_unpack(v)
  if e <= now then return 0 end
  if w > now then
    -- Refused acquires may wait: wake them, and keep the wake for the
    -- next grant (a wake-up wakes one waiter of each process, the others
    -- wait for the next release's).
    redis.call('SET', h, lk_pack(f, 0, w, ''), 'KEEPTTL')
    redis.call('SPUBLISH', lk_wake(h), 'r')
  elseif f < now then
    redis.call('DEL', h)
  else
    redis.call('SET', h, lk_pack(f, 0, 0, ''), 'KEEPTTL')
  end
  return 1
end
if t ~= 'zset' then return 0 end
local lease = redis.call('ZSCORE', h, token)
if not lease then return 0 end
redis.call('ZREM', h, token)
if tonumber(lease) <= now then return 0 end
redis.call('SPUBLISH', lk_wake(h), 'r')
return 1
