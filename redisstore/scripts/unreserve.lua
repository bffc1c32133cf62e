#!lua
-- unreserve: returns to ready the jobs of one tube that owner has reserved,
-- counting neither a release nor a timeout (the owner went away). An owner
-- ending in '/' names a whole session: every owner whose name starts so.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, owner, tube, ids (hex)...
-- Returns: how many jobs it returned.
local owner, tube = ARGV[2], ARGV[3]
local T, us, now = open_tube(tube)
local prefix = string.sub(owner, -1) == '/'
local function owned(o)
  if prefix then
    return string.sub(o, 1, #owner) == owner
  end
  return o == owner
end
local n = 0
for a = 4, #ARGV do
  local idh = ARGV[a]
  local rec, body = load(idh)
  if rec and rec[F_TUBE] == T.ix and rec[F_STATE] == RESERVED and owned(rec[F_OWNER]) then
    unhold(T, idh)
    to_ready(T, idh, rec)
    save(idh, rec)
    n = n + 1
  end
end
if n > 0 then wake(T) end
return done(T, n)
