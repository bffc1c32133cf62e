#!lua
-- finish: ends one job of a tube as delete does, and keeps it with a result
-- while the tube has a retention (see "Kept jobs" in lib.lua).
-- KEYS: m j tubes, then the 6 keys of the tube (see lib.lua)
-- ARGV: now, tube, owner, id (hex), result
-- Returns: 2 kept, 1 deleted (no retention), 0 no such job, -1 reserved by
-- another owner, -2 in another tube
local T = tubekeys(1)
local tube, owner, idh = ARGV[2], ARGV[3], ARGV[4]
local us, now = open({ T })
local had = T.live
local o = delete_one(T, tube, idh, owner, now, ARGV[5])
if o == -3 then
  tick(T, tube, now)
  o = delete_one(T, tube, idh, owner, nil, ARGV[5])
end
settle(T, tube, now, had)
return done(T, o)
