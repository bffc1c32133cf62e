#!lua
-- sc_set: creates or replaces a schedule on the hash tag of its tube.
-- KEYS: sc (the tag's schedule hash: d:<name> definition, b:<name> job body,
--       s:<name> msgpack state {version, next µs or -1, paused 0/1, fires,
--       misfires, job priority, job TTR ms, last fires: flat {tick µs, job id,
--       lateness µs, manual 0/1} newest first, tube (absent in states
--       stored before it was kept), then, absent in states stored before
--       the overlap policy (sc_full fills them in): the last job's id (0
--       none), the overlap policy (0 allow, 1 skip, 2 buffer_one,
--       3 cancel_previous), pause on failure 0/1, skips, the pause
--       reason ('' none)}), scd (due sorted set: name ->
--       next µs, unpaused schedules with a next tick), scn (names, score 0, for
--       listing in name order)
-- ARGV: now (unused), name, definition, next µs (-1: none), job priority, job TTR ms, job body, tube,
--       overlap policy, pause on failure 0/1
-- Returns: {status, 0, definition, body, version, next, paused, fires, misfires, #last, last...}:
--          status 0 stored, 4 unchanged (an equal definition was stored).
local SC, SCD, SCN = KEYS[1], KEYS[2], KEYS[3]
local name, def, nxt = ARGV[2], ARGV[3], tonumber(ARGV[4])
local pri, ttr, body = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]

local h = redis.call('HMGET', SC, 'd:' .. name, 's:' .. name, 'b:' .. name)
local st
if h[2] then
  st = cmsgpack.unpack(h[2])
  if h[1] == def and h[3] == body then
    return sc_append({ 4, 0, h[1], h[3] }, st)
  end
else
  st = { 0, -1, 0, 0, 0, 0, 0, {} }
end
st[1] = st[1] + 1
st[2] = nxt
st[6], st[7] = pri, ttr
st[9] = ARGV[8]
sc_full(st)
st[11], st[12] = tonumber(ARGV[9]), tonumber(ARGV[10])
redis.call('HSET', SC, 'd:' .. name, def, 'b:' .. name, body, 's:' .. name, cmsgpack.pack(st))
if st[3] == 0 and nxt >= 0 then
  redis.call('ZADD', SCD, nxt, name)
else
  redis.call('ZREM', SCD, name)
end
redis.call('ZADD', SCN, 0, name)
return sc_append({ 0, 0, def, body }, st)
