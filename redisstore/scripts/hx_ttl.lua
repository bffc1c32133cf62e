#!lua
-- hx_ttl: the time left before each field's deadline.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, then field names
-- Returns: per field: ms left (>= 0), -1 without TTL, -2 missing or expired.
local now = nowms()
local vals = redis.call('HMGET', KEYS[7], unpack(ARGV, 3))
local out = {}
for k = 1, #vals do
  local raw = vals[k]
  local r = -2
  if raw then
    local dl, gone = deadline(raw, now)
    if dl == 0 then
      r = -1
    elseif not gone then
      r = dl - now
    end
  end
  out[k] = r
end
return out
