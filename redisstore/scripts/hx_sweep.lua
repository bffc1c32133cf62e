#!lua
-- hx_sweep: expires the due fields of one shard, about max of them at most.
-- First the members of z due now: one range read and removal, one read of
-- the values and one deletion per hash, an event appended per field whose
-- deadline is still the member's. Then the due buckets of the wheel, a
-- chunk at a time, the finest first: an entry moves by the deadline it
-- carries to a finer bucket, or to z when due within NEAR ms (written at
-- the end of the call), reading nothing else. A bucket of the earlier
-- layout ("<level>:<index>") is checked against the fields as it always
-- was: an entry whose field is due expires (event appended), one due later
-- moves on, one whose field is gone or has another deadline is dropped.
-- KEYS: w q n i m e (see hx_lib.lua)
-- ARGV: now, cap, max, and optionally the shard's number: refining that is
-- not urgent then goes at a pace (see allowance), a chunk at a time on a
-- grid of milliseconds of the shard's own, so that the shards, whose
-- buckets fall due at the same moments, neither refine all at once nor
-- hold Redis for long (a Sweeper's one call of every due shard would hold
-- it for all of their refining together).
-- Returns: {expired, 1 if due work remains else 0, ms to the next due time
-- (from the whole millisecond of now) or -1, entries looked at, now in µs};
-- refining paced returns 0 and the ms to the shard's next point (or its
-- next due time, if sooner): a call made then finds work, so one that
-- finds none was preceded by another sweeper's.
local now = nowms()
local nowstr = string.format('%d', now) -- formatted once, as an integer, not per event
quiet = true -- the return value tells the caller the next due time
local max = tonumber(ARGV[3])
local shard = ARGV[4] and tonumber(ARGV[4]) -- nil: refine in any call
local work = 0
local emptied = {} -- name -> data key of the hashes fields expired from
local paced = false -- refining stopped early, to go on with a later call
local behind = false -- urgent work left
local urgent, refined = 0, 0 -- entries of urgent buckets (and z), of the others

-- The fields due now. The first HEAD members of z (each starts with its
-- deadline, so no scores are read: formatting them costs Redis more than
-- the read) give both those due (usually all there are: a Sweeper's call
-- on its grid takes about a dozen) and the next due time; only when
-- all of them are due does a range read fetch the rest.
local HEAD = 16
local zs, nz, znext = redis.call('ZRANGE', Z, 0, HEAD - 1), 0, nil
for k = 1, #zs do
  local dl = dec6(zs[k])
  if dl > now then
    znext = dl
    break
  end
  nz = k
end
if nz > max then
  nz = max
elseif nz == HEAD and max > HEAD then
  zs = redis.call('ZRANGEBYSCORE', Z, '-inf', nowstr, 'LIMIT', 0, max)
  nz = #zs
  znext = false -- not known
end
if nz > 0 then
  redis.call('ZREMRANGEBYRANK', Z, 0, nz - 1)
  work, urgent = nz, nz
  if nz >= max then
    behind = true
  end
  -- The members by hash, in flat arrays (no table per member or per
  -- hash): fs[k], dls[k] the field and deadline of member k, later[k] the
  -- next member of the same hash; first[name] the first, order the hashes.
  local fs, dls, later, first, last, order = {}, {}, {}, {}, {}, {}
  for k = 1, nz do
    local m = zs[k]
    local n, p = readuv(m, 7)
    local name = string.sub(m, p, p + n - 1)
    fs[k], dls[k] = string.sub(m, p + n), dec6(m)
    local prev = last[name]
    if prev then
      later[prev] = k
    else
      first[name] = k
      order[#order + 1] = name
    end
    last[name] = k
  end
  -- an event: the deadline formatted as an integer (a number passed to a
  -- command is formatted as a double)
  local function event(name, k, raw)
    redis.call('XADD', E, '*', 'h', name, 'f', fs[k], 'v', string.sub(raw, 7), 'd', string.format('%d', dls[k]), 'x', nowstr)
  end
  for _, name in ipairs(order) do
    local D = BASE .. 'd:' .. name
    local k = first[name]
    if not later[k] then
      -- one field of the hash, the usual case with many hashes
      local raw = redis.call('HGET', D, fs[k])
      if raw and dec6(raw) == dls[k] then
        event(name, k, raw)
        redis.call('HDEL', D, fs[k])
        emitted = emitted + 1
        emptied[name] = D
      end
    else
      local ks, names = {}, {}
      while k do
        ks[#ks + 1], names[#names + 1] = k, fs[k]
        k = later[k]
      end
      local raws = redis.call('HMGET', D, unpack(names))
      local gone = {}
      for j = 1, #ks do
        local raw = raws[j]
        if raw and dec6(raw) == dls[ks[j]] then
          gone[#gone + 1] = names[j]
          event(name, ks[j], raw)
        end
      end
      if #gone > 0 then
        redis.call('HDEL', D, unpack(gone))
        emitted = emitted + #gone
        emptied[name] = D
      end
    end
  end
end

-- take one chunk of bucket b, removing b from q when it was the last
local function take(b)
  local c = tonumber(redis.call('HGET', W, 'c' .. b) or '0')
  local field
  if c > 0 then
    field = 's' .. b .. '.' .. c
    if c == 1 then
      redis.call('HDEL', W, 'c' .. b)
    else
      redis.call('HSET', W, 'c' .. b, c - 1)
    end
  else
    field = 'o' .. b
  end
  local chunk = redis.call('HGET', W, field) or ''
  redis.call('HDEL', W, field)
  if c <= 1 and redis.call('HEXISTS', W, 'o' .. b) == 0 then
    redis.call('ZREM', string.find(b, ':', 1, true) and Q or R, b)
  end
  return chunk
end

local names = {} -- hash id -> name, false when the id is freed

-- is bucket d (level l, index i) urgent: level 0 of the earlier layout, or
-- in the last quarter of the width before its start
local function isUrgent(l, i)
  return l == 0 or i * width(l) - now <= width(l) / 4
end

-- How many chunks of buckets not yet urgent this call may refine. The
-- shard refines them at PACE times the pace that ends each due bucket by the
-- time it would go urgent (its chunks over the ms left until then, summed
-- over the due buckets): one chunk every P ms, or k every 4 ms when that
-- is too few, on a grid of P ms offset by the shard's number, its next
-- point kept in m (field p; P is at most PACEMAX, so that a bucket falling
-- due meanwhile waits no longer). A call before that point refines nothing;
-- the work of a 4 s bucket (2,600 entries a shard at 10,000 due a second
-- over 16 shards) is then spread over its 3 s instead of holding Redis for
-- a third of a second as fast as calls come.
local PACE = 1.25 -- how much faster than the least pace that ends in time
local PACEMAX = 250 -- ms: the longest between two points of a pace
local pace -- {p, u} of m, once read
local urgentAt -- when the first due bucket not urgent goes urgent, when known
local allow, paceNext -- nil: not worked out yet

-- is the shard's point p still ahead (one further than PACEMAX is stale:
-- a clock stepped back)
local function ahead(p)
  return now < p and p - now <= PACEMAX
end
local function allowance(due)
  if allow then
    return allow
  end
  if not shard then
    allow = math.huge
    return allow
  end
  if not pace then
    pace = redis.call('HMGET', M, 'p', 'u')
  end
  local nxt = tonumber(pace[1] or '0')
  if ahead(nxt) then
    allow, paceNext = 0, nxt
    return allow
  end
  local need = 0 -- chunks per ms
  local soonest -- when the first of the due buckets goes urgent
  for _, d in ipairs(due) do
    local dl, di = string.match(d, '^(%d+)[:.](%d+)$')
    dl, di = tonumber(dl), tonumber(di)
    if not isUrgent(dl, di) then
      local c = tonumber(redis.call('HGET', W, 'c' .. d) or '0') + 1
      local at = di * width(dl) - width(dl) / 4
      need = need + c / math.max(1, at - now)
      soonest = math.min(soonest or at, at)
    end
  end
  local P, k = PACEMAX, 1
  if need > 0 then
    P = 1 / (PACE * need)
    if P < 4 then
      k, P = math.ceil(4 * PACE * need), 4
    end
    P = math.min(math.floor(P), PACEMAX)
  end
  -- the shard's next point: the first ms after now on its grid
  local off = (shard * 37) % P
  paceNext = now + P - (now - off) % P
  redis.call('HSET', M, 'p', paceNext, 'u', soonest or now)
  urgentAt = soonest
  allow = k
  return allow
end

-- the entries of a chunk, in three flat arrays (no table per entry): ids,
-- fields, deadlines (new layout; the earlier one's carry none), the names
-- of their ids looked up in one read
local function parse(chunk, lo, new)
  local eid, ef, edl, missing = {}, {}, {}, {}
  local p, k = 1, 0
  while p <= #chunk do
    local id, off, n
    id, p = readuv(chunk, p)
    if new then
      off, p = readuv(chunk, p)
    end
    n, p = readuv(chunk, p)
    k = k + 1
    eid[k], ef[k] = id, string.sub(chunk, p, p + n - 1)
    if new then
      edl[k] = lo + off
    end
    p = p + n
    if names[id] == nil then
      names[id] = false
      missing[#missing + 1] = id
    end
  end
  if #missing > 0 then
    local got = redis.call('HMGET', N, unpack(missing))
    for j, id in ipairs(missing) do
      names[id] = got[j] or false
    end
  end
  return k, eid, ef, edl
end

-- The first bucket of r (this layout) and of q (the earlier one): when
-- neither is due, the wheel has no work, and the sooner is the wheel's
-- next due time.
local function head(set)
  local t = redis.call('ZRANGE', set, 0, 0)
  return t[1] and dueOf(t[1])
end
local rnext, qnext = head(R), head(Q)
local qany = qnext ~= nil -- the earlier layout has buckets
local rdue, qdue = rnext and rnext <= now, qnext and qnext <= now
local wheel = rdue or qdue
-- Before the shard's next point, with no bucket urgent when the last point
-- looked (m field u: the first time one of the due buckets goes urgent),
-- the wheel is left alone: a bucket falling due meanwhile goes urgent only
-- the last quarter of its width (a second or more) after that, and the
-- earlier layout's buckets (due at their deadlines) are looked at always.
if rdue and not qdue and shard then
  pace = redis.call('HMGET', M, 'p', 'u')
  local p, u = tonumber(pace[1] or '0'), tonumber(pace[2] or '0')
  if ahead(p) and now < u then
    wheel, paced, paceNext, urgentAt = false, true, p, u
  end
end
while wheel do
  local due = {}
  if rdue then
    due = redis.call('ZRANGEBYSCORE', R, '-inf', now, 'LIMIT', 0, 64)
  end
  if qdue then
    for _, b in ipairs(redis.call('ZRANGEBYSCORE', Q, '-inf', now, 'LIMIT', 0, 64)) do
      due[#due + 1] = b
    end
  end
  if #due == 0 then
    break
  end
  -- The finest due bucket first: a finer bucket's entries fall due before
  -- a coarser one's, which was made due a whole bucket width early so that
  -- refining it can wait. Urgent buckets (level 0 of the earlier layout,
  -- and coarse ones in the last quarter of that width) take up to max
  -- entries a call, less what z took; the others, at the shard's pace
  -- (allowance) and up to a quarter of max more, so that refining keeps
  -- going while expiries are behind, and when only they are left the call
  -- asks to be called again at the shard's next due time or next point of
  -- its pace: thousands of entries refined at once never hold Redis, and
  -- the fields falling due meanwhile, for long.
  local ub, ul, nb, nl = nil, 99, nil, 99
  for _, d in ipairs(due) do
    local dl, di = string.match(d, '^(%d+)[:.](%d+)$')
    dl = tonumber(dl)
    if isUrgent(dl, tonumber(di)) then
      if dl < ul then
        ub, ul = d, dl
      end
    elseif dl < nl then
      nb, nl = d, dl
    end
  end
  local b, burgent
  if ub and urgent < max then
    b, burgent = ub, true
  elseif nb and refined < max / 4 and allowance(due) > 0 then
    b, burgent = nb, false
    allow = allow - 1
  else
    if ub then
      behind = true
    else
      paced = true
    end
    break
  end
  local l, sep, idx = string.match(b, '^(%d+)([:.])(%d+)$')
  l = tonumber(l)
  local lo = tonumber(idx) * width(l)
  local hi = lo + width(l)
  local new = sep == '.'
  local ne, eid, ef, edl = parse(take(b), lo, new)
  work = work + ne
  if burgent then
    urgent = urgent + ne
  else
    refined = refined + ne
  end
  for k = 1, ne do
    local id, f = eid[k], ef[k]
    local name = names[id]
    if name and new then
      insert(name, f, edl[k], now, l - 1, id)
    elseif name then
      local D = BASE .. 'd:' .. name
      local raw = redis.call('HGET', D, f)
      if raw then
        local dl = dec6(raw)
        if dl >= lo and dl < hi then
          if dl <= now then
            expire(D, name, f, raw, dl, now)
            emptied[name] = D
          else
            insert(name, f, dl, now, l - 1, id)
          end
        end
      end
    end
  end
end

-- Hashes that may have become empty lose their id once per call, not
-- once per field expired: one EXISTS counts the hashes left, and only
-- when some are gone is each looked at.
local dkeys, dnames = {}, {}
for name, D in pairs(emptied) do
  dkeys[#dkeys + 1], dnames[#dnames + 1] = D, name
end
if #dkeys > 0 and redis.call('EXISTS', unpack(dkeys)) < #dkeys then
  for k = 1, #dkeys do
    gc(dkeys[k], dnames[k])
  end
end
local added = zmin -- the least deadline refining adds to z
finish()
if wheel then
  rnext, qnext = head(R), head(Q)
end
if rnext then
  qnext = math.min(qnext or rnext, rnext)
end
if znext == false then
  local ztop = redis.call('ZRANGE', Z, 0, 0)
  znext = ztop[1] and dec6(ztop[1])
elseif added then
  znext = math.min(znext or added, added)
end
if behind or (znext and znext <= now) then
  return { emitted, 1, 0, work, clockus }
end
if paced then
  -- The rest of the refining goes with the next call the shard needs
  -- anyway (its next due time), or at the shard's next point on its grid
  -- (a bucket of this layout falling due before it can wait: see above).
  local wait = paceNext and paceNext - now or 4
  if urgentAt and urgentAt > now then
    wait = math.min(wait, urgentAt - now)
  end
  for _, set in ipairs(paceNext and (qany and { Q } or {}) or { R, Q }) do
    local nxt = redis.call('ZRANGEBYSCORE', set, '(' .. now, '+inf', 'LIMIT', 0, 1)
    if #nxt > 0 then
      wait = math.min(wait, dueOf(nxt[1]) - now)
    end
  end
  if znext then
    wait = math.min(wait, znext - now)
  end
  return { emitted, 0, math.max(1, wait), work, clockus }
end
local due = qnext
if znext then
  due = math.min(due or znext, znext)
end
if not due then
  return { emitted, 0, -1, work, clockus }
end
if due <= now then
  return { emitted, 1, 0, work, clockus }
end
return { emitted, 0, due - now, work, clockus }
