-- Helpers of the lock scripts (lk_*.lua). Every lock script takes
-- KEYS: m (hash: f = last fence, s = arrival counter), h (holders), q
-- (zset: waiter token -> arrival), qe (zset: waiter token -> place lapses,
-- µs); ARGV[1] = now in µs, or "" for TIME.
--
-- h has one of two forms:
-- - the one-holder form, a string "<fence> <lease end> <wake> <token>"
--   (the numbers µs, 16 digits with leading zeros; wake: until when
--   refused acquires may wait for a release's wake-up, the latest lease
--   end that refused one, else 0): a lock (limit 1) with nobody in line.
--   m, q and qe do not exist beside it; the fence is the string's. After
--   a release while wake is ahead, or whose fence is not behind the
--   clock, the string stays as a free lock (lease end 0, no token)
--   keeping both.
-- - the general form, a sorted set (holder token -> lease end, µs), with
--   the fence in m: semaphores, locks with waiters in line, and every lock
--   written by releases before the one-holder form.
-- The scripts of the general form first turn a one-holder h into it
-- (lk_widen); a lock grant that finds no holder and nobody in line writes
-- the one-holder form again.

local function lk_now(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- lk_pack and lk_unpack write and read the one-holder form. Lua's own
-- number formatting keeps 14 digits, so the numbers go through %016d.
local function lk_pack(f, e, w, token)
  return string.format('%016d %016d %016d %s', f, e, w, token)
end

local function lk_unpack(v)
  return tonumber(string.sub(v, 1, 16)), tonumber(string.sub(v, 18, 33)), tonumber(string.sub(v, 35, 50))
end

local function lk_token(v)
  return string.sub(v, 52)
end

-- lk_ms is how long (ms) keys must live that hold a lease ending at e and
-- the fence f: until the later of the two has passed, plus a second.
local function lk_ms(now, e, f)
  return math.floor((math.max(e, f) - now) / 1000) + 1000
end

-- lk_wake is the wake-up channel of the lock whose h is given: the keys'
-- common start and "w" (a shard channel in their slot).
local function lk_wake(h)
  return string.sub(h, 1, -2) .. 'w'
end

-- lk_form is h's form: 'string' (one holder), 'zset' (general), or nil
-- (no key). OBJECT ENCODING answers with a plain string, which costs a
-- script less than TYPE's status reply.
local function lk_form(h)
  local enc = redis.call('OBJECT', 'ENCODING', h)
  if not enc then return nil end
  if enc == 'embstr' or enc == 'raw' then return 'string' end
  return 'zset'
end

-- lk_widen turns a one-holder h into the general form: its holder (if
-- its lease has not ended) into the sorted set, its fence into m.
local function lk_widen(m, h, now)
  if lk_form(h) ~= 'string' then return end
  local v = redis.call('GET', h)
  local f, e = lk_unpack(v)
  local ms = lk_ms(now, e, f)
  redis.call('DEL', h)
  f = math.max(f, tonumber(redis.call('HGET', m, 'f') or '0'))
  redis.call('HSET', m, 'f', f)
  redis.call('PEXPIRE', m, ms)
  if e > now then
    redis.call('ZADD', h, e, lk_token(v))
    redis.call('PEXPIRE', h, ms)
  end
end

-- lk_prune drops ended leases and lapsed places (at most 100 places a
-- call), and returns how many holders and waiters are left. It reads only
-- what exists: an uncontended lock has no waiters and costs two ZCARDs.
-- h is in the general form.
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
-- h is in the general form.
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

-- lk_acquire is Acquire in the general form (see lk_acquire.lua), for a
-- semaphore of limit slots, or a lock (limit 1) that lk_lock.lua could not
-- decide alone. Returns the fence (> 0) when granted, else minus the wait
-- (µs): how long until a slot may come free without a release.
local function lk_acquire(m, h, q, qe, now, token, limit, ttl, queue, placettl)
  -- Nobody holds the semaphore and nobody waits in line (an empty sorted
  -- set does not exist): grant at once. The only deadline is this lease's,
  -- the fence at most now, so the keys live until the later of the two,
  -- plus a second. One EXISTS stands for the counts and the pruning below.
  if limit > 1 and redis.call('EXISTS', h, q) == 0 then
    local f = math.max(tonumber(redis.call('HGET', m, 'f') or '0') + 1, now)
    redis.call('HSET', m, 'f', f)
    redis.call('ZADD', h, now + ttl, token)
    local ms = lk_ms(now, now + ttl, f)
    redis.call('PEXPIRE', m, ms)
    redis.call('PEXPIRE', h, ms)
    return f
  end

  lk_widen(m, h, now)
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
    if limit == 1 and queued == 0 then
      -- A lock with no holder left and nobody in line: back to the
      -- one-holder form (m's arrival counter counts a line there is not).
      -- Acquires refused in the general form left no wake: they may wait
      -- until the last lease m was kept for.
      local w = now + math.max(redis.call('PTTL', m), 0) * 1000
      redis.call('DEL', m)
      redis.call('SET', h, lk_pack(f, now + ttl, w, token), 'PX', lk_ms(now, now + ttl, f))
      return f
    end
    redis.call('HSET', m, 'f', f)
    redis.call('ZADD', h, now + ttl, token)
    if holders == 0 and queued == 0 then
      -- Only ended leases or lapsed places were left: as above.
      local ms = lk_ms(now, now + ttl, f)
      redis.call('PEXPIRE', m, ms)
      redis.call('PEXPIRE', h, ms)
    else
      lk_retain(m, h, q, qe, now, f, queued > 0)
    end
    return f
  end

  if queue then
    if not rank then
      redis.call('ZADD', q, redis.call('HINCRBY', m, 's', 1), token)
    end
    redis.call('ZADD', qe, now + placettl, token)
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
  return -math.max(wait, 1)
end
