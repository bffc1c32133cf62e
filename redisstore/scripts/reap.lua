#!lua
-- reap: the jobs of one tag still reserved by owners of a dead session, and
-- the session's reservation index of that tag is dropped.
-- KEYS: m j tubes, the session's reservation index of this tag
-- ARGV: now, session
-- Returns: a flat array, 2 per job: tube, id (hex).
local prefix = ARGV[2] .. '/'
local out = {}
for _, e in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local idh = string.sub(e, -14)
  local rec = load(idh)
  if rec and rec[F_STATE] == RESERVED and string.sub(rec[F_OWNER], 1, #prefix) == prefix then
    out[#out + 1] = tube_name(rec[F_TUBE])
    out[#out + 1] = idh
  end
end
redis.call('DEL', KEYS[4])
return out
