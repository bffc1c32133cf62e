#!lua
-- ADD: moves the tally by n and returns its new value.
-- KEYS: v (see ex_lib.lua)
-- ARGV: n (a non-zero integer, checked by the caller)
-- Returns the new value.
local v = ex_value(KEYS[1]) + tonumber(ARGV[1])
redis.call('SET', KEYS[1], v)
return v
