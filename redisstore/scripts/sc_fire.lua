#!lua
-- sc_fire: fires one tick of a schedule: puts the tick's job into the
-- schedule's tube and advances the schedule, only if the schedule's version
-- and next tick are those the caller read (compare-and-set), so processes
-- racing on one tick put its job once.
-- KEYS: m j tubes, the 6 keys of the tube (see lib.lua), sc, scd (see sc_set.lua), the ID key (see alloc_ids)
-- ARGV: now, tube, tag index (0-255), name, version, next µs (-1 none),
--       tick µs (-1: fire nothing, only advance), new next µs (-1 none),
--       ticks skipped, manual (1: fire now, compare nothing, keep next),
--       unique key prefix (the job's key is prefix .. tick ms), last fires kept,
--       the default TTR ms (for states stored with a TTR of 0),
--       the reason with which the tick cancels the previous job (cancel_previous),
--       the job's trace context ('' none; record element 7, docs/tracing.md)
-- The previous job (the state's last job id) is read on this tag, where
-- every fire puts its job; a job id of another tag (none is written) is
-- taken for gone. A tick (not a manual fire) first applies pause on
-- failure (previous job buried: pause, record why, count a skip, put
-- nothing) and the overlap policy (skip: previous ready, delayed or
-- reserved; buffer_one: previous ready or delayed, or held itself:
-- count a skip, put nothing; previous reserved: put the job held behind
-- it, see "Held jobs" in lib.lua; cancel_previous: cancel it as
-- cancel.lua does, then put).
-- Returns: {status, job id, definition, body, version, next, paused, fires, misfires,
--          skips, pause reason, last job, #last, last..., cancelled job id (0 none)}:
--          status 0 done, 1 no such schedule, 2 changed since read, 3 tick not due,
--          5 the overlap policy put nothing, 6 paused itself
--          (statuses 1-3 return nothing else).
local T = tubekeys(1)
local SC, SCD = KEYS[10], KEYS[11]
local tube, tag, name = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local manual = ARGV[10] == '1'
local h = redis.call('HMGET', SC, 'd:' .. name, 's:' .. name, 'b:' .. name)
if not h[2] then
  return { 1 }
end
local st = cmsgpack.unpack(h[2])
-- The caller names the tube it read; a schedule of the name on another
-- tube (deleted and re-created since) is not this one.
local stube = st[9] or cjson.decode(h[1]).Job.Tube
if stube ~= tube then
  return { 1 }
end
st[9] = stube
sc_full(st)
local us, now = open({ T })
local tickus = tonumber(ARGV[7])
if manual then
  tickus = us
else
  if st[3] == 1 or st[1] ~= tonumber(ARGV[5]) or st[2] ~= tonumber(ARGV[6]) then
    return { 2 }
  end
  if st[2] > us or tickus > us then
    return { 3 }
  end
end
tick(T, tube, now)
local jobid, status, cancelled = 0, 0, 0
local behind -- buffer_one: the reserved previous job the tick's job is held behind
if tickus >= 0 and not manual and (st[11] ~= 0 or st[12] == 1) and st[10] > 0 and st[10] % 256 == tag then
  local pidh = idhex(st[10])
  local prec = load(pidh)
  if prec and prec[F_TUBE] == T.ix then
    resolve(T, pidh, prec)
    local ps = prec[F_STATE]
    if ps == BURIED then
      if st[12] == 1 then
        status = 6
        st[3] = 1
        local why = 'job ' .. string.format('%d', st[10]) .. ' buried'
        if prec[F_ERROR] ~= '' then
          why = why .. ': ' .. prec[F_ERROR]
        end
        st[14] = why
        st[13] = st[13] + 1
      end
    elseif st[11] == 1 or (st[11] == 2 and ps ~= RESERVED) then
      status = 5
      st[13] = st[13] + 1
    elseif st[11] == 3 then
      cancel_job(T, tube, pidh, prec, ARGV[14], now)
      cancelled = st[10]
    elseif st[11] == 2 then
      behind = pidh -- reserved: see "Held jobs" in lib.lua
    end
  end
end
if tickus >= 0 and status == 0 then
  local ukey = ARGV[11] .. math.floor(tickus / 1000)
  local dup = redis.call('HGET', T.u, ukey)
  if dup then
    jobid = idnum(dup)
  else
    register(T, tube, us)
    number(T, tube)
    local idh = idhex((alloc_ids(KEYS[12], 1, now) + 1) * 256 + tag)
    if behind then
      redis.call('ZADD', T.d, HELD, idh)
    else
      redis.call('ZADD', T.r, st[6], idh)
      fam_ready(T)
    end
    local ttr = st[7]
    if ttr == 0 then
      ttr = tonumber(ARGV[13])
    end
    local rec = pack_job(T.ix, st[6], 0, ttr, now, ukey, h[3], ARGV[15])
    if behind then
      redis.call('HSET', KEYS[2], idh, rec, 'n' .. behind, idh)
    else
      redis.call('HSET', KEYS[2], idh, rec)
    end
    redis.call('HSET', T.u, ukey, idh)
    set(T, 'total', T.total + 1)
    set(T, 'live', T.live + 1)
    if not behind then
      wake(T)
    end
    jobid = idnum(idh)
  end
  st[10] = jobid
  st[4] = st[4] + 1
  local keep = tonumber(ARGV[12])
  local last = { tickus, jobid, us - tickus, manual and 1 or 0 }
  for i = 1, math.min(#st[8], (keep - 1) * 4) do
    last[#last + 1] = st[8][i]
  end
  st[8] = last
end
if not manual then
  st[2] = tonumber(ARGV[8])
  st[5] = st[5] + tonumber(ARGV[9])
end
st[1] = st[1] + 1
redis.call('HSET', SC, 's:' .. name, cmsgpack.pack(st))
if st[3] == 0 and st[2] >= 0 then
  redis.call('ZADD', SCD, st[2], name)
else
  redis.call('ZREM', SCD, name)
end
local out = sc_append({ status, jobid, h[1], h[3] }, st)
out[#out + 1] = cancelled
return done(T, out)
