-- lib.lua: helpers shared by every script. The loader inserts this file
-- after each script's shebang line, so every script starts with these locals.
--
-- Conventions of every script that includes it:
--   KEYS[1] m      per-tag hash: seq (job counter), total, timeouts, hw (clock high-water mark)
--   KEYS[2] j      per-tag hash: job id (14 hex digits) -> cmsgpack(record, body)
--   KEYS[3] tubes  per-tag sorted set: tube name -> creation time (µs)
--   KEYS[4..]      per tube, 6 keys each: t (tube hash), r (ready zset, score pri),
--                  d (delayed zset, score due ms), x (reserved zset, score TTR deadline ms),
--                  b (buried zset, score bury sequence), u (unique key hash)
--   ARGV[1]        "" to use Redis's TIME, or an injected time in microseconds (tests)
--
-- A record is a msgpack array, indexed by the F_* constants below. States:
-- 1 ready, 2 delayed, 3 reserved, 4 buried. Times are milliseconds since the
-- Unix epoch; durations are milliseconds.

local F_TUBE, F_PRI, F_STATE, F_DELAY, F_TTR, F_CREATED, F_DEADLINE = 1, 2, 3, 4, 5, 6, 7
local F_RESERVES, F_TIMEOUTS, F_RELEASES, F_BURIES, F_KICKS, F_OWNER, F_UKEY = 8, 9, 10, 11, 12, 13, 14
local READY, DELAYED, RESERVED, BURIED = 1, 2, 3, 4
local PROMOTE_LIMIT = 1000

-- clock returns the time in microseconds, never less than the tag's
-- high-water mark, so a clock that steps back (failover, NTP) cannot reorder
-- deadlines. write=true records the new mark.
local function clock(write)
  local us
  if ARGV[1] ~= '' then
    us = tonumber(ARGV[1])
  else
    local t = redis.call('TIME')
    us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local hw = tonumber(redis.call('HGET', KEYS[1], 'hw') or '0')
  if us < hw then
    us = hw
  elseif write then
    redis.call('HSET', KEYS[1], 'hw', us)
  end
  return us
end

local function tubekeys(i)
  local o = 3 + (i - 1) * 6
  return { t = KEYS[o + 1], r = KEYS[o + 2], d = KEYS[o + 3], x = KEYS[o + 4], b = KEYS[o + 5], u = KEYS[o + 6] }
end

local function load(idh)
  local v = redis.call('HGET', KEYS[2], idh)
  if not v then
    return nil
  end
  local rec, body = cmsgpack.unpack(v)
  return rec, body
end

local function save(idh, rec, body)
  redis.call('HSET', KEYS[2], idh, cmsgpack.pack(rec, body))
end

local function idnum(idh)
  return tonumber(idh, 16)
end

local function idhex(id)
  return string.format('%014x', id)
end

-- wake tells waiting reservers that tube T may have a job.
local function wake(T)
  redis.call('SPUBLISH', T.t .. ':w', '1')
end

-- paused_until returns the end of T's pause (ms), or nil when not paused at now.
local function paused_until(T, now)
  local pu = redis.call('HGET', T.t, 'pu')
  if pu and tonumber(pu) > now then
    return tonumber(pu)
  end
  return nil
end

-- gc forgets tube T when it holds no job and no pause.
local function gc(T, tube, now)
  if redis.call('ZCARD', T.r) + redis.call('ZCARD', T.d) + redis.call('ZCARD', T.x) + redis.call('ZCARD', T.b) > 0 then
    return
  end
  if paused_until(T, now) then
    return
  end
  redis.call('DEL', T.t, T.u)
  redis.call('ZREM', KEYS[3], tube)
end

-- register records tube T in the tag's registry if it is new, with its
-- creation time in µs (the order Tubes lists them in).
local function register(T, tube, us)
  redis.call('ZADD', KEYS[3], 'NX', us, tube)
end

-- to_ready moves a job to the ready set (its record must be saved by the caller).
local function to_ready(T, idh, rec)
  rec[F_STATE] = READY
  rec[F_DEADLINE] = 0
  rec[F_OWNER] = ''
  redis.call('ZADD', T.r, rec[F_PRI], idh)
end

-- tick applies the transitions that are due in tube T at now (ms): delayed
-- jobs whose time has come become ready, reservations whose TTR ran out end
-- (counting a timeout), a pause that ended is cleared. At most PROMOTE_LIMIT
-- jobs of each kind per call. Returns true if a job became ready.
local function tick(T, tube, now)
  local moved = false
  local due = redis.call('ZRANGE', T.d, '-inf', now, 'BYSCORE', 'LIMIT', 0, PROMOTE_LIMIT)
  for _, idh in ipairs(due) do
    local rec, body = load(idh)
    to_ready(T, idh, rec)
    save(idh, rec, body)
  end
  if #due > 0 then
    redis.call('ZREM', T.d, unpack(due))
    moved = true
  end
  local exp = redis.call('ZRANGE', T.x, '-inf', now, 'BYSCORE', 'LIMIT', 0, PROMOTE_LIMIT)
  for _, idh in ipairs(exp) do
    local rec, body = load(idh)
    rec[F_TIMEOUTS] = rec[F_TIMEOUTS] + 1
    to_ready(T, idh, rec)
    save(idh, rec, body)
  end
  if #exp > 0 then
    redis.call('ZREM', T.x, unpack(exp))
    redis.call('HINCRBY', KEYS[1], 'timeouts', #exp)
    moved = true
  end
  local pu = redis.call('HGET', T.t, 'pu')
  if pu and tonumber(pu) <= now then
    redis.call('HDEL', T.t, 'pu', 'pl')
    gc(T, tube, now)
  end
  return moved
end

-- remove takes a job out of whichever index holds it.
local function unindex(T, idh, rec)
  local s = rec[F_STATE]
  if s == READY then
    redis.call('ZREM', T.r, idh)
  elseif s == DELAYED then
    redis.call('ZREM', T.d, idh)
  elseif s == RESERVED then
    redis.call('ZREM', T.x, idh)
  else
    redis.call('ZREM', T.b, idh)
  end
end

-- reserve_rec marks a job reserved by owner until now+TTR.
local function reserve_rec(T, idh, rec, body, owner, now)
  rec[F_STATE] = RESERVED
  rec[F_OWNER] = owner
  rec[F_RESERVES] = rec[F_RESERVES] + 1
  rec[F_DEADLINE] = now + rec[F_TTR]
  redis.call('ZADD', T.x, rec[F_DEADLINE], idh)
  save(idh, rec, body)
end

-- jobreply is how a job travels back to Go: id, tube, pri, ttr ms, reserves, body.
local function jobreply(idh, rec, body)
  return { idnum(idh), rec[F_TUBE], rec[F_PRI], rec[F_TTR], rec[F_RESERVES], body }
end

-- delete_one deletes a job of tube T for owner: 1 deleted, 0 no such job,
-- -1 reserved by another owner, -2 the job is in another tube.
local function delete_one(T, tube, idh, owner)
  local rec = load(idh)
  if not rec then
    return 0
  end
  if rec[F_TUBE] ~= tube then
    return -2
  end
  if rec[F_STATE] == RESERVED and rec[F_OWNER] ~= owner then
    return -1
  end
  unindex(T, idh, rec)
  redis.call('HDEL', KEYS[2], idh)
  if rec[F_UKEY] ~= '' then
    redis.call('HDEL', T.u, rec[F_UKEY])
  end
  redis.call('HINCRBY', T.t, 'deletes', 1)
  return 1
end

-- next_due returns the earliest time (ms) at which tube T may have a ready
-- job without another write, or nil.
local function next_due(T, now)
  local best = nil
  local function consider(v)
    if v and (best == nil or v < best) then
      best = v
    end
  end
  local d = redis.call('ZRANGE', T.d, 0, 0, 'WITHSCORES')
  if #d > 0 then consider(tonumber(d[2])) end
  local x = redis.call('ZRANGE', T.x, 0, 0, 'WITHSCORES')
  if #x > 0 then consider(tonumber(x[2])) end
  consider(paused_until(T, now))
  return best
end
