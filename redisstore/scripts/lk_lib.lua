-- Helpers of the lock scripts (lk_*.lua). Every lock script takes
-- KEYS: m (hash: f = last fence, s = arrival counter), h (zset: holder
-- token -> lease end, µs), q (zset: waiter token -> arrival), qe (zset:
-- waiter token -> place lapses, µs); ARGV[1] = now in µs, or "" for TIME.

local function lk_now(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- lk_prune drops ended leases and lapsed places (at most 100 places a
-- call), and returns how many holders and waiters are left. It reads only
-- what exists: an uncontended lock has no waiters and costs two ZCARDs.
local function lk_prune(h, q, qe, now)
  local holders = redis.call('ZCARD', h)
  if holders > 0 then
    holders = holders - redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
  end
  local queued = redis.call('ZCARD', q)
  if queued > 0 then
    local gone = redis.call('ZRANGEBYSCORE', qe, '-inf', now, 'LIMIT', 0, 100)
    if #gone > 0 then
      redis.call('ZREM', qe, unpack(gone))
      queued = queued - redis.call('ZREM', q, unpack(gone))
    end
  end
  return holders, queued
end

-- lk_retain makes the keys live until the last deadline they hold and the
-- last fence (µs) have passed, plus a second: a lock nobody holds or waits
-- for takes no memory, and a fence issued ahead of the clock is kept until
-- the clock has caught up with it. f is the last fence when the caller
-- knows it (nil: read it); queued says whether q and qe may hold anything.
local function lk_retain(m, h, q, qe, now, f, queued)
  local last = now
  local top = redis.call('ZRANGE', h, -1, -1, 'WITHSCORES')
  if top[2] then last = math.max(last, tonumber(top[2])) end
  if queued then
    top = redis.call('ZRANGE', qe, -1, -1, 'WITHSCORES')
    if top[2] then last = math.max(last, tonumber(top[2])) end
  end
  f = f or redis.call('HGET', m, 'f')
  if f then last = math.max(last, tonumber(f)) end
  local ms = math.floor((last - now) / 1000) + 1000
  redis.call('PEXPIRE', m, ms)
  redis.call('PEXPIRE', h, ms)
  if queued then
    redis.call('PEXPIRE', q, ms)
    redis.call('PEXPIRE', qe, ms)
  end
end
