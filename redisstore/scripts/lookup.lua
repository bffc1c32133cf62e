#!lua flags=no-writes
-- lookup: a kept job by id (see "Kept jobs" in lib.lua); a live one is
-- peek's.
-- KEYS: m j
-- ARGV: now, id (hex)
-- Returns: { 0 } when no job of that id is kept (or its time has passed),
-- else { 1, tube, job (as jobreply), stats as peek's (state 5, time left 0,
-- owner ''), result ('' for none), ended at ms, dropped at ms, how it ended
-- (1 finished, 2 cancelled), errors (as peek's) }
local idh = ARGV[2]
local v = redis.call('HMGET', KEYS[2], idh, 'p' .. idh, 'f' .. idh, 'e' .. idh)
if not v[1] or not v[2] then
  return { 0 }
end
local rec, body = rec_of(v[1], v[2], nil)
if not rec.ended then
  return { 0 }
end
local tube = tube_name(rec[F_TUBE])
if not tube then
  return { 0 }
end
local now = math.floor(redis_us() / 1000)
local drop = redis.call('ZSCORE', string.sub(KEYS[1], 1, -2) .. 't:' .. tube .. ':k', idh)
if not drop or tonumber(drop) <= now then
  return { 0 }
end
return { 1, tube, jobreply(idh, rec, body, tube), {
  5, rec[F_PRI], now - rec[F_CREATED], rec[F_DELAY], rec[F_TTR], 0,
  rec[F_RESERVES], rec[F_TIMEOUTS], rec[F_RELEASES], rec[F_BURIES], rec[F_KICKS],
  rec[F_CREATED], stamped(rec, F_RESERVED_AT), stamped(rec, F_RELEASED_AT), stamped(rec, F_BURIED_AT),
  stamped(rec, F_KICKED_AT), stamped(rec, F_TIMEDOUT_AT), stamped(rec, F_ERROR_AT), rec[F_ERROR], '' },
  v[3] or '', rec[F_CREATED] + rec.endedat, tonumber(drop), rec.ended, errors_reply(rec, v[4]) }
