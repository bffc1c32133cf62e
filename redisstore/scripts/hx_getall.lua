#!lua
-- hx_getall: reads every live field of one hash.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap
-- Returns: 3 per live field: name, value, deadline ms (0: no TTL).
local now = nowms()
local all = redis.call('HGETALL', KEYS[7])
local out = {}
for k = 1, #all, 2 do
  local dl, gone = deadline(all[k + 1], now)
  if not gone then
    out[#out + 1] = all[k]
    out[#out + 1] = string.sub(all[k + 1], 7)
    out[#out + 1] = dl
  end
end
return out
