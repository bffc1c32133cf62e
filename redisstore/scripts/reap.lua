#!lua
-- reap: the jobs of one tag still reserved by owners of a dead session, and
-- the session's index of that tag is dropped.
-- KEYS: m j tubes, the session's index of this tag
-- ARGV: now, session
-- Returns: a flat array, 2 per job: tube, id (hex).
local prefix = ARGV[2] .. '/'
local out = {}
for _, idh in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  local rec = load(idh)
  if rec and rec[F_STATE] == RESERVED and string.sub(rec[F_OWNER], 1, #prefix) == prefix then
    out[#out + 1] = tube_name(rec[F_TUBE])
    out[#out + 1] = idh
  end
end
redis.call('DEL', KEYS[4])
return out
