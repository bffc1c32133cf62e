-- hx_lib.lua: helpers of the expiring-hash (ttlhash) scripts. The library
-- (library.go) defines them once, when it loads, for the hx_ family's
-- operations, and the entry of every hx_ call runs hx_enter first
-- (families.go); an operation's body runs with them in scope.
--
-- Every hx_ script works in one shard; every key of the shard shares one
-- hash tag {T}, so a script touches one cluster slot:
--   KEYS[1] w  wheel: a hash of packed due-index chunks
--                o<b>      the open chunk of bucket b
--                s<b>.<k>  sealed chunk k of bucket b (k = 1..c<b>)
--                c<b>      how many sealed chunks bucket b has
--              A bucket b is "<level>.<index>" (level LMIN and up): the
--              deadlines in [index*16^level, (index+1)*16^level) ms. An
--              entry of a chunk is varint(hash id) varint(deadline - the
--              bucket's start) varint(#field) field (about 13 bytes for an
--              8-byte field name), so that refining an entry reads nothing
--              but its chunk. (A store written by the earlier layout also
--              holds buckets "<level>:<index>", levels 0 and up, whose
--              entries are varint(hash id) varint(#field) field; the sweep
--              still takes them.)
--   KEYS[2] q  sorted set: bucket of the earlier layout -> due time (ms)
--              ("<base>r" holds the buckets of this layout, so that a
--              sweeper of the earlier version, still running during an
--              upgrade, never meets one: it takes q's buckets as it did)
--              A bucket is due its start less its own width, when its
--              entries are refined into finer buckets (a level-0 bucket of
--              the earlier layout, at its deadline)
--   KEYS[3] n  hash: hash id -> hash name
--   KEYS[4] i  hash: hash name -> hash id (ids are never reused)
--   KEYS[5] m  hash: seq (hash ids issued), dropped (events the cap removed),
--              p (the next ms the sweep may refine buckets not yet urgent),
--              u (when the first of the due buckets goes urgent, as of p)
--   KEYS[6] e  stream of expiry events: h hash, f field, v value, d deadline ms, x expired-at ms
--   KEYS[7] d  when the script names a hash: the hash's data, field -> 6-byte
--              big-endian deadline in ms (0: no TTL) followed by the value
-- and "<base>z", a sorted set of the entries due within NEAR ms: member
-- 6-byte deadline, varint(#hash name), hash name, field; score the
-- deadline. The sweep expires its due members with one range read, one
-- read of the values per hash and one removal.
-- The sweep also touches the data hashes of the due entries it finds; they
-- are named "<base>d:<name>" under the shard's tag, so in the shard's slot.
-- Channel "<base>c" (sharded pub/sub, same slot) is published to after
-- events are appended; channel "<base>s" when a script makes an entry due
-- sooner than every other of the shard, so that sweepers sleeping until
-- the next due time they knew of wake up.
--
-- ARGV[1] is the time in µs, or '' for Redis's TIME; ARGV[2] the cap on the
-- events kept in the shard.

local CHUNK = 480 -- bytes of an open chunk before it is sealed (a sealed one fits 512-byte allocations)
local NEAR = 4096 -- ms: deadlines closer than this are members of z, not wheel entries
local LMIN = 3 -- the finest level of a new bucket (16^3 = 4,096 ms)
local REACH = 256 -- buckets of a level ahead of now before the next level takes a deadline
local TRIMAT = 64 -- entries: a stream passing a multiple of this is trimmed of what every group acknowledged

-- The state of one call, set by hx_enter when it starts.
local W, Q, R, N, I, M, E, Z, BASE, CAP
local emitted = 0
local pend, pendDue, pendOrder = {}, {}, {} -- see insert
local zpend, zmin = {}, nil -- score, member pairs to add to z; their least score
local ids = {} -- hash name -> id, of this call
local quiet = false -- the call is a sweep: it reports the next due time itself
local clockus = 0 -- the time nowms read, in µs

-- hx_enter starts a call: the shard's keys, the event cap, nothing pending.
local function hx_enter()
  W, Q, N, I, M, E = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
  BASE = string.sub(W, 1, -2)
  Z = BASE .. 'z'
  R = BASE .. 'r'
  CAP = tonumber(ARGV[2])
  emitted = 0
  pend, pendDue, pendOrder = {}, {}, {}
  zpend, zmin = {}, nil
  ids = {}
  quiet = false
end

local function nowms()
  if ARGV[1] ~= '' then
    clockus = tonumber(ARGV[1])
    return math.floor(clockus / 1000)
  end
  local t = redis.call('TIME')
  clockus = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function enc6(ms)
  local f = ms % 256
  ms = (ms - f) / 256
  local e = ms % 256
  ms = (ms - e) / 256
  local d = ms % 256
  ms = (ms - d) / 256
  local c = ms % 256
  ms = (ms - c) / 256
  local b = ms % 256
  return string.char((ms - b) / 256 % 256, b, c, d, e, f)
end

local function dec6(s)
  local a, b, c, d, e, f = string.byte(s, 1, 6)
  return ((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f
end

-- the varint of n (most are one or two bytes: taken without a table)
local function uv(n)
  if n < 128 then
    return string.char(n)
  elseif n < 16384 then
    return string.char(n % 128 + 128, math.floor(n / 128))
  end
  local t = {}
  while n >= 128 do
    t[#t + 1] = string.char(n % 128 + 128)
    n = math.floor(n / 128)
  end
  t[#t + 1] = string.char(n)
  return table.concat(t)
end

local function readuv(s, p)
  local n, m = 0, 1
  while true do
    local b = string.byte(s, p)
    p = p + 1
    if b < 128 then
      return n + b * m, p
    end
    n = n + (b - 128) * m
    m = m * 128
  end
end

-- width of a bucket of level l, in ms
local function width(l)
  return 16 ^ l
end

-- the id of hash name, made when make is true
local function idOf(name, make)
  local id = redis.call('HGET', I, name)
  if id or not make then
    return id and tonumber(id)
  end
  id = redis.call('HINCRBY', M, 'seq', 1)
  redis.call('HSET', I, name, id)
  redis.call('HSET', N, id, name)
  return id
end

-- bucket of deadline dl seen at now, at level maxl at most: the finest
-- level from LMIN up whose REACH buckets from now reach dl (4 s buckets up
-- to 17 minutes, 65 s buckets up to 4.7 hours, ...: every level an entry
-- passes through is one more refining of it), or nil when dl is
-- less than NEAR ms away or maxl is below LMIN (the entry goes to z).
-- Returns the bucket, its due time (its start less its own width, so that
-- refining its entries, finer buckets first, a share of every sweep, ends
-- long before the first of them is due) and its start.
-- A bucket already due takes no new entry: its entries are refined from
-- its due time on and go urgent in the last quarter of the width before
-- its start, however far beyond that start each entry's deadline is, so an
-- entry added late would be refined in a hurry (at a million fields, a
-- 65 s bucket entered with 16 s to go held some 170,000 entries refined
-- back to back). The entry goes one level finer, where its bucket starts
-- at least REACH - 1 of that level's widths from now, or to z from level
-- LMIN.
-- (Level 2, 256 ms buckets, was the finest before z took the next 4 s:
-- refining every entry once more cost Redis more than z's larger set.)
local function bucketOf(dl, now, maxl)
  local delta, l = dl - now, LMIN
  if delta < NEAR or maxl < LMIN then
    return nil
  end
  while delta >= REACH * width(l) and l < maxl do
    l = l + 1
  end
  local w = width(l)
  local idx = math.floor(dl / w)
  if idx * w - w < now then
    if l == LMIN then
      return nil
    end
    l = l - 1
    w = width(l)
    idx = math.floor(dl / w)
  end
  local lo = idx * w
  return l .. '.' .. idx, lo - w, lo
end

-- Entries to append, by bucket (pend, pendDue, pendOrder), are written by
-- flush: one read and one write of a bucket's open chunk per call, however
-- many entries it gets; members of z, with one ZADD.

-- index field of hash name for deadline dl, at level maxl at most (id:
-- the hash's id when the caller knows it)
local function insert(name, field, dl, now, maxl, id)
  local b, due, lo = bucketOf(dl, now, maxl or 99)
  if not b then
    local n = #zpend
    -- the score formatted as an integer: a number passed to a command is
    -- formatted as a double, which costs Redis more
    zpend[n + 1] = string.format('%d', dl)
    zpend[n + 2] = enc6(dl) .. uv(#name) .. name .. field
    zmin = math.min(zmin or dl, dl)
    return
  end
  id = id or ids[name]
  if not id then
    id = idOf(name, true)
    ids[name] = id
  end
  local t = pend[b]
  if not t then
    t = {}
    pend[b] = t
    pendDue[b] = due
    pendOrder[#pendOrder + 1] = b
  end
  t[#t + 1] = uv(id) .. uv(dl - lo) .. uv(#field) .. field
end

-- the due time of bucket b (its score in q), from its name: a level-0
-- bucket of the earlier layout is due at its deadline, any other its own
-- width before its start
local function dueOf(b)
  local l, idx = string.match(b, '^(%d+)[:.](%d+)$')
  local w = width(tonumber(l))
  if w == 1 then
    return tonumber(idx)
  end
  return tonumber(idx) * w - w
end

-- the shard's first due time (ms) before this call's writes, or nil (a
-- member of z starts with its deadline)
local function firstDue()
  local a = redis.call('ZRANGE', Q, 0, 0)
  local r = redis.call('ZRANGE', R, 0, 0)
  local b = redis.call('ZRANGE', Z, 0, 0)
  local f = a[1] and dueOf(a[1])
  if r[1] then
    f = math.min(f or dueOf(r[1]), dueOf(r[1]))
  end
  if b[1] then
    f = math.min(f or dec6(b[1]), dec6(b[1]))
  end
  return f
end

-- write the pending entries: appended to each bucket's open chunk, sealing
-- a chunk when it reaches CHUNK bytes; the members of z added. Outside a
-- sweep, an entry due sooner than every other of the shard is announced.
local function flush()
  local sooner, first, looked = nil, nil, false
  local function check(due)
    if quiet then
      return
    end
    if not looked then
      first, looked = firstDue(), true
    end
    if not first or due < first then
      sooner = math.min(sooner or due, due)
    end
  end
  if zmin then
    check(zmin)
  end
  for _, b in ipairs(pendOrder) do
    local open = redis.call('HGET', W, 'o' .. b)
    if not open then
      check(pendDue[b])
      redis.call('ZADD', R, pendDue[b], b)
      open = ''
    end
    local cur, size = { open }, #open
    for _, e in ipairs(pend[b]) do
      cur[#cur + 1] = e
      size = size + #e
      if size >= CHUNK then
        local k = redis.call('HINCRBY', W, 'c' .. b, 1)
        redis.call('HSET', W, 's' .. b .. '.' .. k, table.concat(cur))
        cur, size = {}, 0
      end
    end
    if size > 0 then
      redis.call('HSET', W, 'o' .. b, table.concat(cur))
    else
      redis.call('HDEL', W, 'o' .. b)
    end
  end
  for k = 1, #zpend, 1000 do
    redis.call('ZADD', Z, unpack(zpend, k, math.min(#zpend, k + 999)))
  end
  pend, pendDue, pendOrder = {}, {}, {}
  zpend, zmin = {}, nil
  if sooner then
    redis.call('SPUBLISH', BASE .. 's', sooner)
  end
end

-- forget hash name's id when its data is gone; entries left in the wheel
-- with the old id are skipped.
local function gc(dkey, name)
  if redis.call('EXISTS', dkey) == 0 then
    local id = redis.call('HGET', I, name)
    if id then
      redis.call('HDEL', I, name)
      redis.call('HDEL', N, id)
    end
  end
end

-- expire a field: delete it and append its event
local function expire(dkey, name, field, raw, dl, now)
  redis.call('HDEL', dkey, field)
  redis.call('XADD', E, '*', 'h', name, 'f', field, 'v', string.sub(raw, 7), 'd', dl, 'x', now)
  emitted = emitted + 1
end

-- the deadline of a stored raw value, and whether it has passed
local function deadline(raw, now)
  local dl = dec6(raw)
  return dl, dl > 0 and dl <= now
end

-- each_live calls f(field, raw, dl) for each field named in ARGV from index
-- first on that is live in hash D (named name), expiring on the way those
-- whose deadline has passed, and returns f's results in order, -2 for a
-- field missing or expired.
local function each_live(D, name, first, now, f)
  local out = {}
  for k = first, #ARGV do
    local field = ARGV[k]
    local raw = redis.call('HGET', D, field)
    local code = -2
    if raw then
      local dl, gone = deadline(raw, now)
      if gone then
        expire(D, name, field, raw, dl, now)
      else
        code = f(field, raw, dl)
      end
    end
    out[#out + 1] = code
  end
  return out
end

-- live_fields appends to out, for each live field of all (HGETALL's or
-- HSCAN's name, raw value pairs), its name, value and deadline, and
-- returns out.
local function live_fields(out, all, now)
  for k = 1, #all, 2 do
    local dl, gone = deadline(all[k + 1], now)
    if not gone then
      out[#out + 1] = all[k]
      out[#out + 1] = string.sub(all[k + 1], 7)
      out[#out + 1] = dl
    end
  end
  return out
end

local function parseid(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end

local function idless(a, b)
  local am, as = parseid(a)
  local bm, bs = parseid(b)
  return am < bm or (am == bm and as < bs)
end

-- trim the events every group has acknowledged (those before the oldest
-- entry pending or undelivered in any group); without groups keep them.
local function retain()
  local gs = redis.call('XINFO', 'GROUPS', E)
  if #gs == 0 then
    return
  end
  local floor
  for _, g in ipairs(gs) do
    local f = {}
    for k = 1, #g, 2 do
      f[g[k]] = g[k + 1]
    end
    local keep
    local p = redis.call('XPENDING', E, f['name'])
    if tonumber(p[1]) > 0 then
      keep = p[2]
    else
      local ms, seq = parseid(f['last-delivered-id'])
      keep = ms .. '-' .. (seq + 1)
    end
    if not floor or idless(keep, floor) then
      floor = keep
    end
  end
  redis.call('XTRIM', E, 'MINID', floor)
end

-- at the end of a script: write the pending entries and, after events
-- were appended, hold the cap (or trim what every group acknowledged,
-- each time the stream passes a multiple of TRIMAT) and wake the consumers
local function finish()
  flush()
  if emitted == 0 then
    return
  end
  local len = redis.call('XLEN', E)
  if len > CAP then
    retain()
    local dropped = redis.call('XTRIM', E, 'MAXLEN', CAP)
    if dropped > 0 then
      redis.call('HINCRBY', M, 'dropped', dropped)
    end
  elseif len > TRIMAT and len % TRIMAT < emitted then
    -- the stream passed a multiple of TRIMAT entries: trim what every
    -- group has acknowledged (here rather than in each acknowledgement,
    -- which is then a plain XACK)
    retain()
  end
  redis.call('SPUBLISH', BASE .. 'c', emitted)
end
