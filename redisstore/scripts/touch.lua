#!lua
-- touch: gives a job reserved by owner a fresh TTR from now.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, owner, tube, id (hex)
-- Returns: { 1, ms left on the reservation } touched, { 0 } no such job,
-- { -1 } not reserved by owner, { -2 } in another tube
local owner, tube, idh = ARGV[2], ARGV[3], ARGV[4]
local T, us, now = open_tube(tube)
local rec, body = held(T, idh, owner)
if not rec then return done(T, { body }) end
local deadline = now + rec[F_TTR]
redis.call('ZADD', T.x, deadline, idh)
return done(T, { 1, deadline - now })
