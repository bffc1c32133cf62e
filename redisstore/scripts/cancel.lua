#!lua
-- cancel: cancels one job of a tube, in whatever state it is: the job is
-- removed, as a delete removes it (kept, when the tube keeps finished jobs:
-- ended by a cancel, the reason its last error), and a cancel counted in
-- the tube's cn;
-- when it was reserved, its holder is told on the tag's cancel channel
-- (<base>c, a shard channel of the tag's slot): "<id> <reason>", the id
-- in hex as in j.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, id (hex), reason
-- Returns: the state the job was in (1 ready, 2 delayed, 3 reserved,
-- 4 buried), 0 no such job, -2 in another tube
local tube, idh, reason = ARGV[2], ARGV[3], ARGV[4]
-- A reservation whose TTR has run out ends first (its timeout counts): the
-- job is then ready, and no holder is told.
local T, us, now = open_tube(tube)
local rec, body = find(T, idh)
if not rec then return done(T, body) end
local was = cancel_job(T, tube, idh, rec, reason, now)
free(T, tube, now)
return done(T, was)
