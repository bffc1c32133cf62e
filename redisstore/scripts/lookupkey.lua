#!lua flags=no-writes
-- lookupkey: the id of the job of a tube partition that holds a unique key,
-- live or kept (see "Kept jobs" in lib.lua).
-- KEYS: m j tubes, then the 6 keys of the tube (see lib.lua)
-- ARGV: now (unused), tube, key
-- Returns: the id (hex), or '' when no job holds the key.
local T = tubekeys(1)
local v = redis.call('HGET', T.u, ARGV[3])
if not v then
  return ''
end
return string.sub(v, 1, 14)
