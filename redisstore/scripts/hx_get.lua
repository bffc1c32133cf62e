#!lua
-- hx_get: reads fields of one hash, never an expired one.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, then field names
-- Returns: 2 per field: value (nil when missing or expired), deadline ms (0: no TTL).
local now = nowms()
local vals = redis.call('HMGET', KEYS[7], unpack(ARGV, 3))
local out = {}
for k = 1, #vals do
  local raw = vals[k]
  if raw then
    local dl, gone = deadline(raw, now)
    if gone then
      out[#out + 1] = false
      out[#out + 1] = 0
    else
      out[#out + 1] = string.sub(raw, 7)
      out[#out + 1] = dl
    end
  else
    out[#out + 1] = false
    out[#out + 1] = 0
  end
end
return out
