#!lua
-- peekstate: the next jobs of one tube partition in a state.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, state (1 ready, 2 delayed, 3 reserved, 4 buried), count (at least 1)
-- Returns: { score, job (as jobreply), score, job, ... } in the state's
-- order, {} when there is none. The score orders candidates across
-- partitions: pri, due ms, end of TTR ms or bury sequence.
local tube, state, count = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local T, us, now = open_tube(tube)
local from = T.r
if state == DELAYED then
  from = T.d
elseif state == RESERVED then
  from = T.x
elseif state == BURIED then
  from = T.b
end
local h = redis.call('ZRANGE', from, 0, count - 1, 'WITHSCORES')
local out = {}
for i = 1, #h, 2 do
  local rec, body = load(h[i])
  out[#out + 1] = tonumber(h[i + 1])
  out[#out + 1] = jobreply(h[i], rec, body, tube)
end
return done(T, out)
