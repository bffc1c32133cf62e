#!lua
-- reserve: for each of R requests in turn (each an owner's, merged from
-- callers that waited together), deletes some jobs, then reserves up to max
-- ready jobs from the tubes of one tag, lowest (priority, id) first,
-- skipping paused tubes and tubes their limits hold back (docs/tube-limits.md).
-- KEYS: m j tubes, then 6 keys per tube (see lib.lua)
-- ARGV: now, tube count N, N tube names, request count R, then per request:
--       owner, max, pair count D, D pairs (tube index 1..N, job id hex) to delete
-- Returns: one reply per request: { delete outcomes (1, 0, -1 per pair), jobs (flat, 8 per job as jobreply),
--            next (µs until a job may be ready, or a rate frees a tube with ready jobs, -1 if nothing is scheduled;
--            only when fewer than max jobs were reserved, or when drained),
--            index of the tube next refers to,
--            then when max > 0: drained (1 when jobs were reserved and no ready job it could take is left:
--            none, or limits hold back every one; next then says when one may be),
--            and when max is 0 (a look before choosing among tags): the priority and id of the job it would take, or -1 and '' }
local n = tonumber(ARGV[2])
local Ts, names = {}, {}
for i = 1, n do
  Ts[i] = tubekeys(i)
  names[i] = ARGV[2 + i]
end
local us, now = open(Ts)
local had = {}
for i = 1, n do
  tick(Ts[i], names[i], now)
  had[i] = Ts[i].live
end

local live = {}
local limited = false
for i = 1, n do
  if not paused_until(Ts[i], now) then
    live[#live + 1] = i
    if limit_open(Ts[i], names[i]) then
      limited = true
    end
  end
end

-- open_tubes returns the live tubes that their limits do not hold back at
-- us (all of them when none is limited).
local function open_tubes()
  if not limited then
    return live
  end
  local c = {}
  for _, i in ipairs(live) do
    if not Ts[i].lim or limit_wait(Ts[i], us) == 0 then
      c[#c + 1] = i
    end
  end
  return c
end

-- held counts a hold on each limited live tube with ready jobs that its
-- limits hold back, and returns the least time (µs) until a rate frees
-- one of them and that tube's index, or -1.
local function held()
  local next, nexttube = -1, 0
  for _, i in ipairs(live) do
    local T = Ts[i]
    if T.lim and redis.call('ZCARD', T.r) > 0 then
      local w = limit_wait(T, us)
      if w ~= 0 then
        redis.call('HINCRBY', T.t, 'lh', 1)
      end
      if w > 0 and (next < 0 or w < next) then
        next, nexttube = w, i
      end
    end
  end
  return next, nexttube
end

-- drained_after reports, after a reserve took jobs, whether no ready job
-- it could take is left in the live tubes (1, else 0): none is ready, or
-- limits hold back every one. When drained it also returns the least time
-- (µs) until one may be (a rate frees a tube with ready jobs, or a delayed
-- job, a TTR's end or a pause's end falls due) and that tube's index, or
-- -1: the caller's other waiters sleep until then rather than each asking
-- once more for nothing.
local function drained_after()
  local next, nexttube = -1, 0
  for _, i in ipairs(live) do
    local T = Ts[i]
    local w = 0
    if T.lim then
      w = limit_wait(T, us)
    end
    if w == 0 then
      if redis.call('ZCARD', T.r) > 0 then
        return 0, -1, 0
      end
    elseif w > 0 and (next < 0 or w < next) and redis.call('ZCARD', T.r) > 0 then
      next, nexttube = w, i
    end
  end
  for i = 1, n do
    local due = next_due(Ts[i], now)
    if due then
      local wait = due * 1000 - us
      if wait < 0 then wait = 0 end
      if next < 0 or wait < next then
        next, nexttube = wait, i
      end
    end
  end
  return 1, next, nexttube
end

-- head returns the tube of cand whose ready head has the smallest (pri, id).
local function head(cand)
  local best, bestpri, bestid = nil, nil, nil
  for _, i in ipairs(cand) do
    local h = redis.call('ZRANGE', Ts[i].r, 0, 0, 'WITHSCORES')
    if #h > 0 then
      local pri = tonumber(h[2])
      if best == nil or pri < bestpri or (pri == bestpri and h[1] < bestid) then
        best, bestpri, bestid = i, pri, h[1]
      end
    end
  end
  return best, bestpri, bestid
end

-- serve answers one request whose ARGV start at a; it returns the reply
-- and the ARGV index of the next request.
local function serve(a)
  local owner, max, d = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local deleted = {}
  for p = a + 3, a + 1 + 2 * d, 2 do
    local i = tonumber(ARGV[p])
    deleted[#deleted + 1] = delete_one(Ts[i], names[i], ARGV[p + 1], owner)
  end
  local jobs = {}
  local got = 0
  local cand = open_tubes()
  while got < max do
    local best, idh
    if #cand == 1 then
      best = cand[1]
      local h = redis.call('ZPOPMIN', Ts[best].r)
      idh = h[1]
    else
      local _
      best, _, idh = head(cand)
      if best then
        redis.call('ZREM', Ts[best].r, idh)
      end
    end
    if idh == nil then
      break
    end
    local T = Ts[best]
    local rec, body = load(idh)
    local deadline = reserve_rec(T, idh, rec, body, owner, now)
    local r = jobreply(idh, rec, body, names[best], deadline - now)
    for k = 1, #r do
      jobs[#jobs + 1] = r[k]
    end
    got = got + 1
    if T.lim then
      limit_charge(T, us)
      if limit_wait(T, us) ~= 0 then
        -- held back now: the other candidates stay as they were
        local c = {}
        for _, i in ipairs(cand) do
          if i ~= best then c[#c + 1] = i end
        end
        cand = c
      end
    end
  end

  local next, nexttube = -1, 0
  if limited and (got < max or max == 0) then
    next, nexttube = held()
  end
  if got < max or max == 0 then
    for i = 1, n do
      local due = next_due(Ts[i], now) -- exact, not the lower bound nd: a waiter sleeps until then
      if due then
        local wait = due * 1000 - us
        if wait < 0 then wait = 0 end
        if next < 0 or wait < next then
          next, nexttube = wait, i
        end
      end
    end
  end

  if max == 0 then
    local _, pri, idh = head(cand)
    return { deleted, jobs, next, nexttube, pri or -1, idh or '' }, a + 3 + 2 * d
  end
  local drained = 0
  if got > 0 then
    drained, next, nexttube = drained_after()
  end
  return { deleted, jobs, next, nexttube, drained }, a + 3 + 2 * d
end

local out = {}
local a = 4 + n
for r = 1, tonumber(ARGV[3 + n]) do
  out[r], a = serve(a)
end
for i = 1, n do
  limit_flush(Ts[i])
  if had[i] > 0 then
    free(Ts[i], names[i], now)
  else
    gc(Ts[i], names[i], now)
  end
  flush(Ts[i])
end
return out
