#!lua
-- reservejob: reserves one job by id if it is ready, delayed or buried,
-- whether or not its tube is paused.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, owner, tube, id (hex)
-- Returns: { 1, job (as jobreply) }, or { 0 } no such job, { -1 } reserved, { -2 } in another tube
local owner, tube, idh = ARGV[2], ARGV[3], ARGV[4]
local T, us, now = open_tube(tube)
local rec, body = find(T, idh)
if not rec then return done(T, { body }) end
if rec[F_STATE] == RESERVED then return done(T, { -1 }) end
unindex(T, idh, rec)
local deadline = reserve_rec(T, idh, rec, body, owner, now)
return done(T, { 1, jobreply(idh, rec, body, tube, deadline - now) })
