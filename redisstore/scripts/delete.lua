#!lua
-- delete: deletes jobs of one tube.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, owner, tube, job ids (hex)...
-- Returns: one outcome per id: 1 deleted, 0 no such job, -1 reserved by another owner, -2 in another tube
local T = tubekeys(1)
local owner, tube = ARGV[2], ARGV[3]
local us, now = open({ T })
tick(T, tube, now)
local out = {}
for a = 4, #ARGV do
  out[#out + 1] = delete_one(T, tube, ARGV[a], owner, session_key(9))
end
gc(T, tube, now)
return done(T, out)
