#!lua
-- TTL: what is left of token's lease. Reads only.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token
-- Returns the time left (µs), or -1 when token holds no live lease.
local h = KEYS[2]
local now = lk_now(ARGV[1])
local until_
local t = lk_form(h)
if t == 'string' then
  local v = redis.call('GET', h)
  if lk_token(v) == ARGV[2] then
    local _, e = lk_unpack(v)
    until_ = e
  end
elseif t == 'zset' then
  until_ = redis.call('ZSCORE', h, ARGV[2])
end
if not until_ or tonumber(until_) <= now then return -1 end
return tonumber(until_) - now
