#!lua
-- hx_scan: reads some live fields of one hash (HSCAN).
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, cursor ("0" starts), count
-- Returns: the next cursor ("0" when done), then 3 per live field: name, value, deadline ms.
local now = nowms()
local r = redis.call('HSCAN', KEYS[7], ARGV[3], 'COUNT', ARGV[4])
local all = r[2]
local out = { r[1] }
for k = 1, #all, 2 do
  local dl, gone = deadline(all[k + 1], now)
  if not gone then
    out[#out + 1] = all[k]
    out[#out + 1] = string.sub(all[k + 1], 7)
    out[#out + 1] = dl
  end
end
return out
