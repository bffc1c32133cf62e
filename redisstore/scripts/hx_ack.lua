#!lua
-- hx_ack: acknowledges events of a group in one shard, then trims the
-- events every group has acknowledged once the stream is longer than low.
-- KEYS: w q n i m e (see hx_lib.lua)
-- ARGV: now, cap, group, low, then stream IDs
-- Returns: how many were pending.
local n = redis.call('XACK', E, ARGV[3], unpack(ARGV, 5))
if n > 0 and redis.call('XLEN', E) > tonumber(ARGV[4]) then
  retain()
end
return n
