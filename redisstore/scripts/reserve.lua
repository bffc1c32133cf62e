#!lua
-- reserve: for each of R requests in turn (each an owner's, merged from
-- callers that waited together), deletes some jobs, then reserves up to max
-- ready jobs from the tubes of one tag, lowest (priority, id) first,
-- skipping paused tubes and tubes their limits hold back (docs/tube-limits.md).
-- KEYS: m j tubes, then 6 keys per tube (see lib.lua)
-- ARGV: now, tube count N, N tube names, request count R, then per request:
--       owner, max (-1: only the deletes, a delete merged into the call),
--       pair count D, D pairs (tube index 1..N, job id hex) to delete
-- Returns: one reply per request: { delete outcomes (1, 0, -1 per pair), jobs (flat, 9 per job as jobreply),
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

-- Tubes with groups (docs/tube-limits.md, "Groups"; keys in lib.lua): a
-- reserve of such a tube takes from its own jobs and its groups' in
-- turn. fams lists them; members holds the group tubes opened, by name,
-- each ticked once and flushed at the end.
local FAM_SCAN = 64 -- turns looked at per pick: a group further back waits for those before it
local fams, isfam, selfin = {}, {}, {}
local members = {}
local function member(name)
  for i = 1, n do
    if names[i] == name then
      return Ts[i]
    end
  end
  local M = members[name]
  if not M then
    M = tubekeys_of(name)
    local h = redis.call('HMGET', M.t, 'nd', 'pu', 'live', 'total', 'deletes', 'ix', 'rf')
    M.nd, M.pu, M.live, M.total, M.deletes = num(h[1]), num(h[2]), num(h[3]) or 0, num(h[4]) or 0, num(h[5]) or 0
    M.ix, M.rf = num(h[6]), num(h[7]) or 0
    members[name] = M
    tick(M, name, now)
  end
  return M
end
for i = 1, n do
  local T = Ts[i]
  if not T.fam and (T.hasfam or (not T.ix and redis.call('EXISTS', fam_key('gm', names[i])) == 1)) then
    fams[#fams + 1] = i
    isfam[i] = true
    if not T.ix then
      -- the tube itself is gone: its limits and rate state are in m
      local h = redis.call('HMGET', KEYS[1], 'l:' .. names[i], 'lt:' .. names[i])
      T.lim, T.tat = h[1] or nil, num(h[2])
    end
    for _, name in ipairs(redis.call('ZRANGE', fam_key('gd', names[i]), '-inf', now, 'BYSCORE', 'LIMIT', 0, FAM_SCAN)) do
      member(name)
    end
  end
end

-- parent_of returns the tube of group tube T, with its limits opened: the
-- request's own when it asks for it too.
local parents = {}
local function parent_of(T)
  for i = 1, n do
    if names[i] == T.fam then
      return Ts[i]
    end
  end
  local P = parents[T.fam]
  if not P then
    P = tubekeys_of(T.fam)
    local h = redis.call('HMGET', P.t, 'ix', 'lim', 'tat')
    P.ix, P.lim, P.tat = num(h[1]), h[2] or nil, num(h[3])
    if not P.ix then
      h = redis.call('HMGET', KEYS[1], 'l:' .. T.fam, 'lt:' .. T.fam)
      P.lim, P.tat = h[1] or nil, num(h[2])
    end
    limit_open(P, T.fam)
    parents[T.fam] = P
  end
  return P
end

local live = {}
local limited = false
for i = 1, n do
  if not paused_until(Ts[i], now) then
    if isfam[i] then
      limit_open(Ts[i], names[i])
    else
      live[#live + 1] = i
      if limit_open(Ts[i], names[i]) then
        limited = true
      elseif Ts[i].fam then
        local P = parent_of(Ts[i])
        if P.lim then
          Ts[i].plim = P
          limited = true
        end
      end
    end
  end
end

-- parent_wait is how long (µs) until the limits of T, the tube named name,
-- allow one more reserve from its family: its cap counts its groups'
-- reservations too.
local function parent_wait(T, name)
  if not T.lim then
    return 0
  end
  if T.cap > 0 then
    T.gres = T.gres or tonumber(redis.call('HGET', KEYS[1], 'gr:' .. name) or '0')
  end
  return limit_wait(T, us, T.gres)
end

-- group_wait is how long (µs) until the group template of tube T allows
-- one more reserve of its group M.
local function group_wait(T, M)
  if not T.lim then
    return 0
  end
  if T.gcap and T.gcap > 0 then
    M.nx = M.nx or redis.call('ZCARD', M.x)
    if M.nx >= T.gcap then
      return -1
    end
  end
  if T.giv then
    M.gtat = M.gtat or gtat_read(M.name)
    return gcra_wait(M.gtat, T.giv, T.gburst, us)
  end
  return 0
end

-- fam_pick returns the tube of tube i's family a reserve takes from now:
-- the first in turn with ready jobs, not paused, that limits do not hold
-- back (Ts[i] itself for its own jobs). Else nil, the least time (µs)
-- until a rate frees one (-1: caps, or nothing ready), and whether the
-- family has ready jobs; with a pick, also its ready head (id, priority).
-- A tube found with no ready job leaves the turns.
local function fam_pick(i)
  local T, P = Ts[i], names[i]
  if paused_until(T, now) then
    return nil, -1, false
  end
  local G = fam_key('g', P)
  if not selfin[i] and T.ix and redis.call('ZCARD', T.r) > 0 then
    if not redis.call('ZSCORE', G, P) then
      redis.call('ZADD', G, redis.call('HINCRBY', KEYS[1], 'gt:' .. P, 1), P)
    end
    selfin[i] = true
  end
  local list = redis.call('ZRANGE', G, 0, FAM_SCAN - 1)
  if #list == 0 then
    return nil, -1, false
  end
  local w = parent_wait(T, P)
  if w ~= 0 then
    return nil, w, true
  end
  local wait, ready = -1, false
  for _, name in ipairs(list) do
    local M = T
    if name ~= P then
      M = member(name)
    end
    local h = redis.call('ZRANGE', M.r, 0, 0, 'WITHSCORES')
    if #h == 0 then
      redis.call('ZREM', G, name)
      M.inrot = false
      if M == T then
        selfin[i] = false
      end
    elseif not paused_until(M, now) then
      ready = true
      local gw = 0
      if M ~= T then
        gw = group_wait(T, M)
      end
      if gw == 0 then
        return M, 0, true, h
      end
      if gw > 0 and (wait < 0 or gw < wait) then
        wait = gw
      end
    end
  end
  return nil, wait, ready
end

-- tube_wait is limit_wait for tube i of the request: for a group's tube,
-- its tube's limits over the family and its group template.
local function tube_wait(i)
  local T = Ts[i]
  if T.plim then
    local w = parent_wait(T.plim, T.fam)
    if w == 0 then
      w = group_wait(T.plim, T)
    end
    return w
  end
  return limit_wait(T, us)
end

-- group_charge counts one reserve of group tube M against the rates of
-- its tube P.
local function group_charge(P, M)
  if P.gres then
    P.gres = P.gres + 1
  end
  limit_charge(P, us)
  if P.giv then
    M.gtat = gcra_charge(M.gtat or gtat_read(M.name), us, P.giv)
    M.gtatdirty = true
  end
end

-- fam_served gives M, of tube i's family, just served, the last turn, and
-- charges the rates over it.
local function fam_served(i, M)
  local T, P = Ts[i], names[i]
  local name = M.name or P
  local G = fam_key('g', P)
  if redis.call('ZCARD', M.r) > 0 then
    redis.call('ZADD', G, redis.call('HINCRBY', KEYS[1], 'gt:' .. P, 1), name)
  else
    redis.call('ZREM', G, name)
    M.inrot = false
    if M == T then
      selfin[i] = false
    end
  end
  if T.lim then
    if M == T then
      limit_charge(T, us)
    else
      group_charge(T, M)
    end
  elseif M ~= T and T.gres then
    T.gres = T.gres + 1
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
    if not (Ts[i].lim or Ts[i].plim) or tube_wait(i) == 0 then
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
  for _, i in ipairs(fams) do
    local M, w, ready = fam_pick(i)
    if not M and ready then
      if Ts[i].ix then
        redis.call('HINCRBY', Ts[i].t, 'lh', 1)
      else
        redis.call('HINCRBY', KEYS[1], 'gh:' .. names[i], 1) -- the tube itself is gone
      end
      if w > 0 and (next < 0 or w < next) then
        next, nexttube = w, i
      end
    end
  end
  for _, i in ipairs(live) do
    local T = Ts[i]
    if (T.lim or T.plim) and redis.call('ZCARD', T.r) > 0 then
      local w = tube_wait(i)
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

-- soonest_due returns next and nexttube, or the least time (µs) until a
-- job of a tube or of its groups falls due (a delayed job, a TTR's end, a
-- pause's end) and that tube's index when it comes sooner. The time is
-- exact, not the lower bound nd: a waiter sleeps until then.
local function soonest_due(next, nexttube)
  for i = 1, n do
    local due = next_due(Ts[i], now)
    if due then
      local wait = math.max(due * 1000 - us, 0)
      if next < 0 or wait < next then
        next, nexttube = wait, i
      end
    end
    if isfam[i] then
      -- the groups' next due time
      local g = redis.call('ZRANGE', fam_key('gd', names[i]), 0, 0, 'WITHSCORES')
      if #g > 0 then
        local wait = math.max(tonumber(g[2]) * 1000 - us, 0)
        if next < 0 or wait < next then
          next, nexttube = wait, i
        end
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
  for _, i in ipairs(fams) do
    local M, w, ready = fam_pick(i)
    if M then
      return 0, -1, 0
    end
    if ready and w > 0 and (next < 0 or w < next) then
      next, nexttube = w, i
    end
  end
  for _, i in ipairs(live) do
    local T = Ts[i]
    local w = 0
    if T.lim or T.plim then
      w = tube_wait(i)
    end
    if w == 0 then
      if redis.call('ZCARD', T.r) > 0 then
        return 0, -1, 0
      end
    elseif w > 0 and (next < 0 or w < next) and redis.call('ZCARD', T.r) > 0 then
      next, nexttube = w, i
    end
  end
  next, nexttube = soonest_due(next, nexttube)
  return 1, next, nexttube
end

-- head returns the tube of cand whose ready head has the smallest (pri, id),
-- with the families' picks among them: then also the picked tube of the
-- family (nil for a tube of cand).
local function head(cand)
  local best, bestpri, bestid, bestM = nil, nil, nil, nil
  local function consider(i, M, h)
    h = h or redis.call('ZRANGE', M.r, 0, 0, 'WITHSCORES')
    if #h > 0 then
      local pri = tonumber(h[2])
      if best == nil or pri < bestpri or (pri == bestpri and h[1] < bestid) then
        best, bestpri, bestid, bestM = i, pri, h[1], nil
        if isfam[i] then
          bestM = M
        end
      end
    end
  end
  for _, i in ipairs(cand) do
    consider(i, Ts[i])
  end
  for _, i in ipairs(fams) do
    local M, _, _, h = fam_pick(i)
    if M then
      consider(i, M, h)
    end
  end
  return best, bestpri, bestid, bestM
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
  if max < 0 then
    -- a delete riding in the call (runner.go, mergeCalls): nothing to reserve
    return { deleted, {}, -1, 0, 0 }, a + 3 + 2 * d
  end
  local jobs = {}
  local got = 0
  local cand = open_tubes()
  while got < max do
    local best, idh, pri, M
    if #cand == 1 and #fams == 0 then
      best = cand[1]
      local h = redis.call('ZPOPMIN', Ts[best].r)
      idh, pri = h[1], tonumber(h[2])
    else
      best, pri, idh, M = head(cand)
      if best then
        redis.call('ZREM', (M or Ts[best]).r, idh)
      end
    end
    if idh == nil then
      break
    end
    local T = M or Ts[best]
    local r = take(T, idh, pri, owner, now, T.name or names[best])
    for k = 1, #r do
      jobs[#jobs + 1] = r[k]
    end
    got = got + 1
    if M then
      fam_served(best, M)
    elseif T.lim or T.plim then
      if T.plim then
        group_charge(T.plim, T)
      else
        limit_charge(T, us)
      end
      if tube_wait(best) ~= 0 then
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
  if (limited or #fams > 0) and (got < max or max == 0) then
    next, nexttube = held()
  end
  if got < max or max == 0 then
    next, nexttube = soonest_due(next, nexttube)
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
for fam, P in pairs(parents) do
  if P.tatdirty then
    if P.ix then
      redis.call('HSET', P.t, 'tat', P.tat)
    else
      redis.call('HSET', KEYS[1], 'lt:' .. fam, P.tat)
    end
  end
end
for i = 1, n do
  if Ts[i].gtatdirty then
    gtat_write(Ts[i].name, Ts[i].gtat, us)
  end
end
for name, M in pairs(members) do
  if M.gtatdirty then
    gtat_write(name, M.gtat, us)
  end
  gc(M, name, now)
  flush(M)
end
for i = 1, n do
  limit_flush(Ts[i])
  if isfam[i] and not Ts[i].ix then
    -- a tube with groups but no hash of its own: nothing to forget, and
    -- nothing to write but its rate's state, kept in m
    if Ts[i].dirty.tat then
      redis.call('HSET', KEYS[1], 'lt:' .. names[i], Ts[i].tat)
    end
    Ts[i].dirty = {}
  else
    settle(Ts[i], names[i], now, had[i])
  end
  flush(Ts[i])
end
return out
