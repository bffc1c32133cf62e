#!lua
-- kickjob: moves one buried or delayed job to ready.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, id (hex)
-- Returns: 1 kicked, 0 no such job, -2 in another tube, -3 neither buried nor delayed
local tube, idh = ARGV[2], ARGV[3]
local T, us, now = open_tube(tube)
local rec, body = find(T, idh)
if not rec then return done(T, body) end
if rec[F_STATE] ~= BURIED and rec[F_STATE] ~= DELAYED then return done(T, -3) end
unindex(T, idh, rec)
rec[F_KICKS] = rec[F_KICKS] + 1
stamp(rec, F_KICKED_AT, now)
to_ready(T, idh, rec)
save(idh, rec)
wake(T)
return done(T, 1)
