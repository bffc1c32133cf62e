#!lua
-- retain: sets a tube partition's retention (see "Kept jobs" in lib.lua):
-- in the tag's m (k:<tube>), which outlives the tube, and in the tube's
-- hash (kr) while it exists.
-- KEYS: m j tubes, then the 6 keys of the tube (see lib.lua)
-- ARGV: now (unused), tube, retention ms (0 clears it)
-- Returns: 1
local T = tubekeys(1)
local tube, ms = ARGV[2], tonumber(ARGV[3])
local exists = redis.call('EXISTS', T.t) == 1
if ms > 0 then
  redis.call('HSET', KEYS[1], 'k:' .. tube, ms)
  if exists then
    redis.call('HSET', T.t, 'kr', ms)
  end
else
  redis.call('HDEL', KEYS[1], 'k:' .. tube)
  if exists then
    redis.call('HDEL', T.t, 'kr')
  end
end
return 1
