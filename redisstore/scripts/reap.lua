#!lua flags=no-writes
-- reap: the jobs of one tag still reserved by owners of a dead session,
-- found in the reserved sets of the tag's tubes (see held_by in lib.lua).
-- KEYS: m j tubes
-- ARGV: now, session
-- Returns: a flat array, 2 per job: tube, id (hex).
local prefix = ARGV[2] .. '/'
local out = {}
held_by(prefix, function(o) return string.sub(o, 1, #prefix) == prefix end, function(tube, idh)
  out[#out + 1] = tube
  out[#out + 1] = idh
end)
return out
