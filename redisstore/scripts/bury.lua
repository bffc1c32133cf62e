#!lua
-- bury: moves a job reserved by owner to the end of its tube's buried list.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, owner, tube, id (hex), pri (-1: keep the job's), reason ("" for none: the last error stays)
-- Returns: 1 buried, 0 no such job, -1 not reserved by owner, -2 in another tube
local owner, tube, idh, pri, reason = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6] or ''
local T, us, now = open_tube(tube)
local rec, body = held(T, idh, owner)
if not rec then return done(T, body) end
slot_freed(T)
unhold(T, idh)
if pri >= 0 then rec[F_PRI] = pri end
rec[F_BURIES] = rec[F_BURIES] + 1
stamp(rec, F_BURIED_AT, now)
stamp_attempt_error(idh, rec, reason, now)
rec[F_STATE] = BURIED
rec[F_OWNER] = ''
if rec.behind then
  -- the job held behind it is ready (see "Held jobs" in lib.lua)
  redis.call('HDEL', KEYS[2], 'n' .. idh)
  unbuffer(T, rec.behind)
end
flush(T)
redis.call('ZADD', T.b, redis.call('HINCRBY', T.t, 'bseq', 1), idh)
redis.call('HINCRBY', T.t, 'bu', 1)
save(idh, rec)
return 1
