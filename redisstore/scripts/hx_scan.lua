#!lua
-- hx_scan: reads some live fields of one hash (HSCAN).
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, cursor ("0" starts), count
-- Returns: the next cursor ("0" when done), then 3 per live field: name, value, deadline ms.
local now = nowms()
local r = redis.call('HSCAN', KEYS[7], ARGV[3], 'COUNT', ARGV[4])
return live_fields({ r[1] }, r[2], now)
