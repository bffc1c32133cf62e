#!lua
-- hx_len: counts the live fields of one hash. It reads every value: a hash
-- may hold expired fields the sweep has not reached yet.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap
-- Returns: the count.
local now = nowms()
local vals = redis.call('HVALS', KEYS[7])
local n = 0
for k = 1, #vals do
  local _, gone = deadline(vals[k], now)
  if not gone then
    n = n + 1
  end
end
return n
