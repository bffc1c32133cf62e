#!lua
-- Refresh: make token's lease end a lease from now.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, lease (µs)
-- Returns 1, or 0 when token holds no live lease.
local m, h, q, qe = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = lk_now(ARGV[1])
local token, ttl = ARGV[2], tonumber(ARGV[3])
if lk_form(h) == 'string' then
  local v = redis.call('GET', h)
  if lk_token(v) ~= token then return 0 end
  local f, e, w = lk_unpack(v)
  if e <= now then return 0 end
  redis.call('SET', h, lk_pack(f, now + ttl, w, token), 'PX', lk_ms(now, now + ttl, f))
  return 1
end
local _, queued = lk_prune(h, q, qe, now)
if not redis.call('ZSCORE', h, token) then return 0 end
redis.call('ZADD', h, 'XX', now + ttl, token)
lk_retain(m, h, q, qe, now, nil, queued > 0)
return 1
