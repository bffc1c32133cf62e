#!lua
-- Acquire: grant token a slot of the lock, or queue it.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, limit, lease (µs), queue ("1" to wait in line), place lease (µs)
-- Returns {1, fence, 0} when granted, else {0, 0, wait (µs)}: how long
-- until a slot may come free without a release.
local m, h, q, qe = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = lk_now(ARGV[1])
local token, limit, ttl = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

-- Nobody holds the lock and nobody waits in line (an empty sorted set does
-- not exist): grant at once. The only deadline is this lease's, the fence
-- at most now, so the keys live until the later of the two, plus a second.
-- One EXISTS stands for the counts and the pruning below.
if redis.call('EXISTS', h, q) == 0 then
  local f = math.max(tonumber(redis.call('HGET', m, 'f') or '0') + 1, now)
  redis.call('HSET', m, 'f', f)
  redis.call('ZADD', h, now + ttl, token)
  local ms = math.floor(math.max(ttl, f - now) / 1000) + 1000
  redis.call('PEXPIRE', m, ms)
  redis.call('PEXPIRE', h, ms)
  return {1, f, 0}
end

local holders, queued = lk_prune(h, q, qe, now)

local free = limit - holders
local rank = false
if queued > 0 then rank = redis.call('ZRANK', q, token) end
if free > 0 and (holders == 0 or not redis.call('ZSCORE', h, token)) and (queued == 0 or (rank and rank < free)) then
  if rank then
    redis.call('ZREM', q, token)
    redis.call('ZREM', qe, token)
  end
  local f = math.max(tonumber(redis.call('HGET', m, 'f') or '0') + 1, now)
  redis.call('HSET', m, 'f', f)
  redis.call('ZADD', h, now + ttl, token)
  if holders == 0 and queued == 0 then
    -- Only ended leases or lapsed places were left: as above.
    local ms = math.floor(math.max(ttl, f - now) / 1000) + 1000
    redis.call('PEXPIRE', m, ms)
    redis.call('PEXPIRE', h, ms)
  else
    lk_retain(m, h, q, qe, now, f, queued > 0)
  end
  return {1, f, 0}
end

if ARGV[5] == '1' then
  if not rank then
    redis.call('ZADD', q, redis.call('HINCRBY', m, 's', 1), token)
  end
  redis.call('ZADD', qe, now + tonumber(ARGV[6]), token)
  lk_retain(m, h, q, qe, now, nil, true)
end

local wait = 1000
if free <= 0 then
  local e = redis.call('ZRANGE', h, 0, 0, 'WITHSCORES')
  if e[2] then wait = tonumber(e[2]) - now end
else
  -- Slots are free but kept for waiters ahead: until the first of their
  -- places (not ours) may lapse.
  local e = redis.call('ZRANGE', qe, 0, 1, 'WITHSCORES')
  if e[1] == token then e = {e[3], e[4]} end
  if e[2] then wait = tonumber(e[2]) - now end
end
return {0, 0, math.max(wait, 1)}
