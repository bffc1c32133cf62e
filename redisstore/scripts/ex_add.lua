#!lua
-- ADD: moves the tally by n and returns its new value.
-- KEYS: v (see ex_lib.lua)
-- ARGV: now (see ex_lib.lua), n (a non-zero integer, checked by the caller)
-- Returns the new value.
local v = ex_value(KEYS[1]) + tonumber(ARGV[2])
redis.call('SET', KEYS[1], v)
return v
