#!lua
-- release: returns a job reserved by owner to ready (delay 0) or delayed.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, owner, tube, id (hex), pri (-1: keep the job's), delay ms, reason ("" for none: the last error stays)
-- Returns: 1 released, 0 no such job, -1 not reserved by owner, -2 in another tube
local owner, tube, idh, pri, delay, reason = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] or ''
local T, us, now = open_tube(tube)
local rec, body = held(T, idh, owner)
if not rec then return done(T, body) end
unhold(T, idh)
if pri >= 0 then rec[F_PRI] = pri end
rec[F_RELEASES] = rec[F_RELEASES] + 1
rec[F_DELAY] = delay
stamp(rec, F_RELEASED_AT, now)
stamp_attempt_error(idh, rec, reason, now)
if delay > 0 then
  rec[F_STATE] = DELAYED
  rec[F_OWNER] = ''
  redis.call('ZADD', T.d, now + delay, idh)
  schedule(T, now + delay)
else
  to_ready(T, idh, rec)
end
save(idh, rec)
if delay > 0 and not T.lim and not T.fam then
  wake_in(T, delay) -- nothing can be taken before then
else
  wake(T) -- ready, or a cap's place freed (a group's: its tube's cap or template)
end
return done(T, 1)
