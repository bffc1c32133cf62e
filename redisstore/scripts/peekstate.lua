#!lua
-- peekstate: the next job of one tube partition in a state.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, state (1 ready, 2 delayed, 4 buried)
-- Returns: { score, job (as jobreply) } or {} when there is none. The score
-- orders candidates across partitions: pri, due ms or bury sequence.
local T = tubekeys(1)
local tube, state = ARGV[2], tonumber(ARGV[3])
local us, now = open({ T })
tick(T, tube, now)
local from = T.r
if state == DELAYED then
  from = T.d
elseif state == BURIED then
  from = T.b
end
local h = redis.call('ZRANGE', from, 0, 0, 'WITHSCORES')
if #h == 0 then return done(T, {}) end
local rec, body = load(h[1])
return done(T, { tonumber(h[2]), jobreply(h[1], rec, body, tube) })
