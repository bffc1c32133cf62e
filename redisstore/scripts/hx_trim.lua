#!lua
-- hx_trim: trims the events every group of one shard has acknowledged.
-- KEYS: w q n i m e (see hx_lib.lua)
-- ARGV: now, cap
-- Returns: the events kept.
if redis.call('EXISTS', E) == 1 then
  retain()
end
return redis.call('XLEN', E)
