#!lua
-- peek: a job by id, in whatever state, and its stats.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, id (hex)
-- Returns: { 1, job (as jobreply), stats, errors } or { 0 } no such job, { -2 } in another tube.
-- stats: state, pri, age ms, delay ms, ttr ms, time left ms, reserves, timeouts, releases, buries, kicks,
--   then the history: put, last reserve, release, bury, kick, timeout and error (times in ms, 0 for
--   never), the last error (a string), and the owner of its reservation ('' unless reserved).
-- errors: the job's error history as errors_reply gives it (read only when it had an error).
local tube, idh = ARGV[2], ARGV[3]
local T, us, now = open_tube(tube)
local rec, body = find(T, idh)
if not rec then return done(T, { body }) end
local left, owner = 0, ''
if rec[F_STATE] == RESERVED then owner = rec[F_OWNER] end
if rec[F_STATE] == RESERVED or rec[F_STATE] == DELAYED then
  local from = T.x
  if rec[F_STATE] == DELAYED then from = T.d end
  left = tonumber(redis.call('ZSCORE', from, idh))
  if left >= HELD then left = now end -- held behind a running job: no due time
  left = left - now
  if left < 0 then left = 0 end
end
local errs = {}
if rec[F_ERROR_AT] >= 0 then
  errs = errors_reply(rec, redis.call('HGET', KEYS[2], 'e' .. idh))
end
return done(T, { 1, jobreply(idh, rec, body, tube), {
  rec[F_STATE], rec[F_PRI], now - rec[F_CREATED], rec[F_DELAY], rec[F_TTR], left,
  rec[F_RESERVES], rec[F_TIMEOUTS], rec[F_RELEASES], rec[F_BURIES], rec[F_KICKS],
  rec[F_CREATED], stamped(rec, F_RESERVED_AT), stamped(rec, F_RELEASED_AT), stamped(rec, F_BURIED_AT),
  stamped(rec, F_KICKED_AT), stamped(rec, F_TIMEDOUT_AT), stamped(rec, F_ERROR_AT), rec[F_ERROR], owner }, errs })
