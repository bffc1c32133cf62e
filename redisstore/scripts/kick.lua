#!lua
-- kick: moves up to n jobs of one tube partition to ready: buried jobs,
-- oldest first, if there are any, else delayed jobs, soonest first.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, n (at most 1000 per call)
-- Returns: how many jobs it moved.
local tube, n = ARGV[2], tonumber(ARGV[3])
local T, us, now = open_tube(tube)
local from = T.b
if redis.call('ZCARD', T.b) == 0 then
  from = T.d
end
local ids = redis.call('ZRANGE', from, 0, n - 1)
for _, idh in ipairs(ids) do
  local rec, body = load(idh)
  rec[F_KICKS] = rec[F_KICKS] + 1
  stamp(rec, F_KICKED_AT, now)
  to_ready(T, idh, rec)
  save(idh, rec)
end
if #ids > 0 then
  redis.call('ZREM', from, unpack(ids))
  wake(T)
end
return done(T, #ids)
