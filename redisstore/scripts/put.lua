#!lua
-- put: stores jobs in one tube partition.
-- KEYS: m j tubes, then the 6 keys of the tube (see lib.lua), then the ID key (see alloc_ids)
-- ARGV: now, tube, tag index (0-255), then 6 per job: pri, delay ms, ttr ms, unique key, trace context ('' for none), body
--   A unique key that begins with a NUL byte carries the key's windows
--   (NewJob.UniqueFor, UniqueKept) and a debounce (Debounce, MaxWait,
--   DuplicateLive): NUL, "<unique for ms>:<1 kept, 0 not>[:<debounce: 1
--   replace, 2 extend, 3 both>:<max wait ms, 0 none>:<1 duplicate live, 0 not>]",
--   NUL, the key.
-- Returns: a flat array, 2 per job: id, then 0 stored, or for a duplicate (its id is returned)
-- 10 + the state of the live job that holds the key, or 5 (finished) for a kept one,
-- or for a kept one finished with a result, that result (a string) instead of 5,
-- or for a debounce (the delayed job it changed) 20 + that job's state after.
-- A job put with the key of a kept job is stored, and the key is then its,
-- unless the kept job's window holds or the put asks UniqueKept.
-- A debounce put whose key's live job is not delayed (its due time has
-- come, promoted or not) is stored and takes the key over, unless it asks
-- DuplicateLive or the job's window holds: that job's record loses its
-- key (element 6 ''), rewritten whole.
local T = tubekeys(1)
local tube, tag = ARGV[2], tonumber(ARGV[3])
local us, now = open_put(T)
if not us then
  -- A new tube, or something falls due: the whole open and tick (a pause
  -- that ended may have ended the tube).
  us, now = open({ T })
  tick(T, tube, now)
end
local n = (#ARGV - 3) / 6

-- state_at is the state at now of the live job idh that holds a key: a
-- delay or a TTR that has run out makes it ready, as the tick that moves
-- it would (the put's fast open runs no tick).
local function state_at(T, idh, now)
  local at
  if redis.call('HEXISTS', KEYS[2], 'o' .. idh) == 1 then
    at = redis.call('ZSCORE', T.x, idh)
    if at and tonumber(at) <= now then
      return READY
    end
    return RESERVED
  elseif redis.call('ZSCORE', T.r, idh) then
    return READY
  end
  at = redis.call('ZSCORE', T.d, idh)
  if at then
    if tonumber(at) <= now then
      return READY
    end
    return DELAYED
  end
  return BURIED
end

-- Debounce (nil unless a job of the call asks it; put_debounce in lib.lua)
local ov
local xfor = {}

local dup, fresh, kdup, xkey = {}, {}, {}, {}
local stored = 0
for i = 0, n - 1 do
  local ukey = ARGV[4 + i * 6 + 3]
  local ukept = false
  if ukey ~= '' and string.byte(ukey, 1) == 0 then
    local e = string.find(ukey, '\0', 2, true)
    local f = {}
    for w in string.gmatch(string.sub(ukey, 2, e - 1), '[^:]+') do
      f[#f + 1] = w
    end
    xfor[i], ukept = tonumber(f[1]), f[2] == '1'
    if f[3] then
      local m = tonumber(f[3])
      ov = ov or { deb = {}, changed = {}, delay = {}, pri = {}, body = {} }
      ov.deb[i] = { m ~= 2, m >= 2, tonumber(f[4]), f[5] == '1' }
    end
    ukey = string.sub(ukey, e + 1)
    xkey[i] = ukey
  end
  if ukey ~= '' then
    local d = fresh[ukey] or redis.call('HGET', T.u, ukey)
    if type(d) == 'string' and #d > 14 then
      -- a kept job's: '<id>k<end of its window>:<its drop>' (ms)
      local c = string.find(d, ':', 16, true)
      if now < tonumber(string.sub(d, 16, c - 1)) or ukept and now < tonumber(string.sub(d, c + 1)) then
        d = string.sub(d, 1, 14)
        kdup[i] = true
      else
        d = nil
      end
    end
    if d and not kdup[i] and ov and ov.deb[i] then
      d = put_debounce(T, now, ov, xfor, i, d)
    end
    dup[i] = d
  end
  if not dup[i] then
    stored = stored + 1
    if ukey ~= '' then
      fresh[ukey] = i
    end
  end
end

local out = {}
if stored > 0 and not T.ix then
  -- A tube with a number is registered (gc drops both together).
  register(T, tube, us)
  number(T, tube)
end
local seq = 0
if stored > 0 then
  seq = alloc_ids(KEYS[#KEYS], stored, now)
end
local ids = {}
-- Waiters are woken when a job is ready, or told when a delayed job falls
-- due before what they may be sleeping towards: the tube's next due time
-- before this call (due0, read at the first delayed job that needs it).
local ready, soonest, due0 = false, nil, nil
-- The writes of every job go out together: one HSET of the records, one
-- ZADD of the ready jobs, one of the delayed (at most maxBatch = 1000 jobs
-- a call, well inside Lua's limit on unpack).
local recs, readys, delayed, ukeys = {}, {}, {}, {}
for i = 0, n - 1 do
  local a = 4 + i * 6
  local d = dup[i]
  if d then
    local st = 5
    if ov and ov.changed[i] then
      st = ov.changed[i]
      if type(d) == 'number' then
        d = ids[d]
      end
    elseif type(d) == 'number' then
      d = ids[d] -- an earlier job of this call
      st = 10 + READY
      if ((ov and ov.delay[dup[i]]) or tonumber(ARGV[4 + dup[i] * 6 + 1])) > 0 then st = 10 + DELAYED end
    elseif not kdup[i] then
      st = 10 + state_at(T, d, now)
    else
      st = redis.call('HGET', KEYS[2], 'f' .. d) or 5
    end
    out[#out + 1] = idnum(d)
    out[#out + 1] = st
  else
    local delay, ukey = tonumber(ARGV[a + 1]), xkey[i] or ARGV[a + 3]
    local pri, body = ARGV[a], ARGV[a + 5]
    if ov then
      delay, pri, body = ov.delay[i] or delay, ov.pri[i] or pri, ov.body[i] or body
    end
    seq = seq + 1
    local id = seq * 256 + tag
    local idh = idhex(id)
    ids[i] = idh
    if delay > 0 then
      if not ready and (soonest == nil or delay < soonest) then
        -- nd is no later than the next due time, so a job due before it
        -- is due before whatever waiters sleep towards (nd nil: nothing is
        -- scheduled); else the exact next due time decides.
        local before = T.nd == nil or now + delay < T.nd
        if not before then
          due0 = due0 or next_due(T, now) or math.huge
          before = now + delay < due0
        end
        if before then
          soonest = delay
        end
      end
      delayed[#delayed + 1] = now + delay
      delayed[#delayed + 1] = idh
      schedule(T, now + delay)
    else
      ready = true
      readys[#readys + 1] = pri -- the priority as Go sent it: no conversion
      readys[#readys + 1] = idh
    end
    if ukey ~= '' then
      ukeys[#ukeys + 1] = ukey
      ukeys[#ukeys + 1] = idh
    end
    recs[#recs + 1] = idh
    recs[#recs + 1] = pack_job(T.ix, tonumber(pri), delay, tonumber(ARGV[a + 2]), now, ukey, body, ARGV[a + 4], xfor[i])
    out[#out + 1] = id
    out[#out + 1] = 0
  end
end
if #recs > 0 then
  redis.call('HSET', KEYS[2], unpack(recs))
end
if #readys > 0 then
  redis.call('ZADD', T.r, unpack(readys))
  fam_ready(T)
end
if #delayed > 0 then
  redis.call('ZADD', T.d, unpack(delayed))
end
if #ukeys > 0 then
  redis.call('HSET', T.u, unpack(ukeys))
end
if stored > 0 then
  set(T, 'total', T.total + stored)
  set(T, 'live', T.live + stored)
  if ready then
    wake(T)
  elseif soonest then
    wake_in(T, soonest)
  end
end
if ov and ov.wake and not (stored > 0 and ready) then
  wake(T) -- a debounce made a job ready
end
return done(T, out)
