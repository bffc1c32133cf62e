#!lua
-- hx_getall: reads every live field of one hash.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap
-- Returns: 3 per live field: name, value, deadline ms (0: no TTL).
local now = nowms()
return live_fields({}, redis.call('HGETALL', KEYS[7]), now)
