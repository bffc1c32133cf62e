#!lua flags=no-writes
-- GET: the tally's value. Reads only.
-- KEYS: v (see ex_lib.lua)
-- ARGV: now (see ex_lib.lua)
-- Returns the value, 0 when the tally was never added to.
return ex_value(KEYS[1])
