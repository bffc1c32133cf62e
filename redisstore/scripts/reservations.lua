#!lua flags=no-writes
-- reservations: the jobs of one tag that owner has reserved, found in the
-- reserved sets of the tag's tubes (see held_by in lib.lua).
-- KEYS: m j tubes
-- ARGV: now, owner
-- Returns: a flat array, 2 per job: id, ms left on the reservation.
local owner = ARGV[2]
local now = math.floor(redis_us() / 1000)
local out = {}
held_by(owner, function(o) return o == owner end, function(_, idh, deadline)
  if deadline > now then
    out[#out + 1] = idnum(idh)
    out[#out + 1] = deadline - now
  end
end)
return out
