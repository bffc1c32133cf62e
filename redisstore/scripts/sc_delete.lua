#!lua
-- sc_delete: removes a schedule.
-- KEYS: sc, scd, scn (see sc_set.lua)
-- ARGV: now (unused), name
-- Returns: 1 when it was there, 0 when not.
local SC, SCD, SCN = KEYS[1], KEYS[2], KEYS[3]
local name = ARGV[2]
local n = redis.call('HDEL', SC, 'd:' .. name, 'b:' .. name, 's:' .. name)
redis.call('ZREM', SCD, name)
redis.call('ZREM', SCN, name)
if n > 0 then
  return 1
end
return 0
