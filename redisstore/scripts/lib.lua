-- lib.lua: the queue's helpers. The library (library.go) defines them once,
-- when it loads, for the queue's operations, the counters' and the
-- schedules'; an operation's body runs with them in scope.
--
-- Conventions of every operation that uses them:
--   KEYS[1] m      per-tag hash: gone (jobs ever put in tubes that have since
--                  gone: the jobs ever put are gone plus the tubes' totals),
--                  timeouts (TTR expiries),
--                  tix (tube numbers issued), t:<n> (the name of tube number n),
--                  id (on a cluster: the last job sequence number issued in this tag),
--                  l:<tube> (a tube's limits, "events:per µs:burst:cap"; see
--                  docs/tube-limits.md), lt:<tube> (its rate's theoretical arrival time, µs,
--                  while the tube does not exist), k:<tube> (its retention, ms: see
--                  "Kept jobs" below)
--   KEYS[2] j      per-tag hash: a job's fields <id>, p<id>, o<id> (id: 14 hex digits; see Layout 3)
--   KEYS[3] tubes  per-tag sorted set: tube name -> creation time (µs)
--   KEYS[4..]      per tube, 6 keys each:
--                  t  tube hash: live (jobs held), rf (references held), total (jobs put), deletes, pauses,
--                     nd (a time, ms, no later than the tube's next due transition),
--                     pu/pl (pause end and length, ms), bseq (bury sequence),
--                     hw (the highest Redis time seen, µs), ix (the tube's number in its records),
--                     rs/bu/to (reserves, buries and timeouts of its jobs),
--                     lim (a copy of m's l:<tube>, the tube's limits, while it exists),
--                     tat (its rate's theoretical arrival time, µs, while it exists),
--                     lh (reserves its limits held back),
--                     kr (a copy of m's k:<tube>, its retention, ms, while it exists),
--                     kn (its kept jobs: the members of T:k)
--                  r  ready sorted set, score priority
--                  d  delayed sorted set, score due time (ms)
--                  x  reserved sorted set, score TTR deadline (ms)
--                  b  buried sorted set, score bury sequence
--                  u  unique key hash: key -> job id
--   ARGV[1]        "" to use Redis's TIME, or an injected time in microseconds (tests)
--
-- A job is up to four fields of j (layout 3; see "Layout 3" below and
-- docs/redis-data-model.md): its record, written once by the put; its past,
-- once it has one; its reservation, while reserved; its error history, once
-- a release or bury gave a reason. In a script a job is a
-- table indexed by the F_* constants below. The tube is its number in the
-- tag (m's t:<n>), not its name. The due time or TTR deadline is the job's
-- score in d or x. States: 1 ready, 2 delayed, 3 reserved, 4 buried: the
-- set that holds the job. Times are milliseconds since the Unix epoch;
-- durations are milliseconds.
--
-- A script opens its tubes (one HMGET each), applies what is due (tick) when
-- it takes or moves jobs by their state (open_tube does both for a script on
-- one tube), does its work, and flushes the tube fields it changed in one
-- HSET.

local F_TUBE, F_PRI, F_STATE, F_DELAY, F_TTR, F_CREATED = 1, 2, 3, 4, 5, 6
local F_RESERVES, F_TIMEOUTS, F_RELEASES, F_BURIES, F_KICKS, F_OWNER, F_UKEY = 7, 8, 9, 10, 11, 12, 13
local F_RESERVED_AT, F_RELEASED_AT, F_ERROR_AT, F_ERROR, F_BURIED_AT, F_TIMEDOUT_AT, F_KICKED_AT = 14, 15, 16, 17, 18, 19, 20
local READY, DELAYED, RESERVED, BURIED = 1, 2, 3, 4
local PROMOTE_LIMIT = 1000
-- HELD is the score in d of a job held behind another (see "Held jobs"):
-- a due time no clock reaches (2^52 ms), never taken for a due time.
local HELD = 4503599627370496

local function num(v)
  if v then
    return tonumber(v)
  end
  return nil
end

-- redis_us is Redis's clock in microseconds, or the injected time.
local function redis_us()
  if ARGV[1] ~= '' then
    return tonumber(ARGV[1])
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- famof reads the name of a tube from its hash's key t: the tube's name,
-- and for the tube of a group ("p;g", docs/tube-limits.md) its family p.
local function famof(t)
  local k = #KEYS[1] + 2 -- t is KEYS[1] (<base>m) less m, then t:, then the name
  local i = string.find(t, ';', k + 1, true)
  if i and i < #t then
    return string.sub(t, k, i - 1), string.sub(t, k)
  end
  return nil, nil
end

local function tubekeys(i)
  local o = 3 + (i - 1) * 6
  local T = { t = KEYS[o + 1], r = KEYS[o + 2], d = KEYS[o + 3], x = KEYS[o + 4], b = KEYS[o + 5], u = KEYS[o + 6], dirty = {} }
  T.fam, T.name = famof(T.t)
  return T
end

-- tubekeys_of names the keys of tube name of this tag (for the groups a
-- reserve of their tube reaches: keys of the tube's slot).
local function tubekeys_of(name)
  local t = string.sub(KEYS[1], 1, -2) .. 't:' .. name
  local T = { t = t, r = t .. ':r', d = t .. ':d', x = t .. ':x', b = t .. ':b', u = t .. ':u', dirty = {} }
  T.fam, T.name = famof(t)
  return T
end

-- set changes a field of T's hash, written by flush; false deletes it.
local function set(T, field, value)
  if value == false then
    T[field] = nil
  else
    T[field] = value
  end
  T.dirty[field] = value
end

-- stage adds field f of a hash to the changes hset (its new value v) and
-- hdel (false: f is deleted) that write_fields writes. (flush stages its
-- fields inline: it runs on every call.)
local function stage(hset, hdel, f, v)
  if v == false then
    hdel[#hdel + 1] = f
  else
    hset[#hset + 1], hset[#hset + 2] = f, v
  end
end

-- write_fields writes the changes stage made to hash key: one HSET, one
-- HDEL, each only when it has fields.
local function write_fields(key, hset, hdel)
  if #hset > 0 then
    redis.call('HSET', key, unpack(hset))
  end
  if #hdel > 0 then
    redis.call('HDEL', key, unpack(hdel))
  end
end

-- flush writes the fields of T's hash that changed (false deletes one).
local function flush(T)
  if T.reserved and T.rs then
    -- the reserves counted, in the same HSET as the rest when open read them
    set(T, 'rs', T.rs + T.reserved)
    T.reserved = nil
  end
  local hset, hdel = {}, {}
  for f, v in pairs(T.dirty) do
    if v == false then
      hdel[#hdel + 1] = f
    else
      hset[#hset + 1] = f
      hset[#hset + 1] = v
    end
  end
  write_fields(T.t, hset, hdel)
  T.dirty = {}
  if T.reserved then
    redis.call('HINCRBY', T.t, 'rs', T.reserved)
    T.reserved = nil
  end
end

-- open loads the state of tubes Ts and returns the time (µs, ms): Redis's
-- clock, never less than the tubes' high-water marks, so a clock that steps
-- back (a failover, NTP) cannot reorder deadlines by more than the marks'
-- 10 ms granularity.
local function open(Ts)
  local us = redis_us()
  for _, T in ipairs(Ts) do
    local h = redis.call('HMGET', T.t, 'nd', 'pu', 'live', 'total', 'deletes', 'hw', 'ix', 'rf', 'lim', 'tat', 'fm', 'rs', 'cw', 'kr', 'kn')
    T.nd, T.pu, T.live, T.total, T.deletes, T.hw = num(h[1]), num(h[2]), num(h[3]) or 0, num(h[4]) or 0, num(h[5]) or 0, num(h[6]) or 0
    T.ix, T.rf, T.lim, T.tat, T.hasfam = num(h[7]), num(h[8]) or 0, h[9] or nil, num(h[10]), h[11]
    T.rs, T.cw, T.kr, T.kn = num(h[12]) or 0, h[13], num(h[14]), num(h[15]) or 0
    if T.hw > us then
      us = T.hw
    end
  end
  local now = math.floor(us / 1000)
  for _, T in ipairs(Ts) do
    if us >= T.hw + 10000 then
      set(T, 'hw', us)
    end
    T.now = now
  end
  return us, now
end

-- open_put is open for a put into tube T, reading only what a put uses: it
-- returns the time (µs, ms) as open does, or nil when the tube has no
-- number yet (it is new) or a pause of it has ended (the tube may be gone):
-- then the caller opens T with open and ticks it. A put applies no other
-- due transition: it stores new jobs whatever the state of the others,
-- and the reserve that next looks at the tube applies them.
local function open_put(T)
  local us = redis_us()
  local h = redis.call('HMGET', T.t, 'nd', 'hw', 'ix', 'live', 'total', 'pu')
  local nd, hw, ix, pu = num(h[1]), num(h[2]) or 0, num(h[3]), num(h[6])
  if hw > us then
    us = hw
  end
  local now = math.floor(us / 1000)
  if not ix or (pu and pu <= now) then
    return nil
  end
  T.nd, T.hw, T.ix, T.live, T.total, T.pu = nd, hw, ix, num(h[4]) or 0, num(h[5]) or 0, pu
  if us >= hw + 10000 then
    set(T, 'hw', us)
  end
  return us, now
end

-- Layout 3: a job is up to four fields of the tag's hash j (KEYS[2]):
--   <id>   its record, written once at put and never rewritten:
--          msgpack {tube number, priority, delay ms, TTR ms, put ms[, unique key]}
--          followed by msgpack(body)
--   p<id>  its past, only once it has one (written by the transitions that
--          change it: a release, bury, kick, timeout, a reservation given back):
--          msgpack {ended reservations, timeouts, releases, buries, kicks,
--          priority (-1: the record's), delay (-1: the record's), then the
--          times of its last reserve, release, error, bury, timeout and kick
--          (ms after put, -1 never) with the last error after the error's
--          time}, trailing defaults left out
--   o<id>  its reservation, while it is reserved: "<reserved at, ms after put>:<owner>"
--   n<id>  the job held behind it, while it runs (see "Held jobs"): the
--          held job's id (hex)
--   e<id>  its error history, once a release or bury gave a reason:
--          msgpack {at, attempt, reason, at, attempt, reason, ...}, oldest
--          first (at: ms after put; attempt: its reserves then), the last
--          MAX_ERRORS within MAX_ERROR_BYTES of reasons; removed with the job
-- Its state is the index that holds it (r, d, x or b); a reserved job has o.
-- In a script a job is a record table indexed by the F_* constants, with
-- the state left nil until known (resolve).
local PAST_DEFAULTS = { 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, '', -1, -1, -1 }
local NPAST = 14

-- pack_job is a new job's record as put stores it: the trailing elements
-- (6 the unique key, 7 the trace context, 8 the window on the key, ms) left
-- out when empty.
local function pack_job(tix, pri, delay, ttr, created, ukey, body, tc, ufor)
  if ufor and ufor > 0 then
    return cmsgpack.pack({ tix, pri, delay, ttr, created, ukey, tc or '', ufor }, body)
  end
  if tc and tc ~= '' then
    return cmsgpack.pack({ tix, pri, delay, ttr, created, ukey, tc }, body)
  end
  if ukey ~= '' then
    return cmsgpack.pack({ tix, pri, delay, ttr, created, ukey }, body)
  end
  return cmsgpack.pack({ tix, pri, delay, ttr, created }, body)
end

-- rec_of reads a job from its stored fields: the record v, the past pv
-- and the reservation ov (nil when it has none); it returns the record
-- table and the body.
local function rec_of(v, pv, ov)
  local h, body = cmsgpack.unpack(v)
  local rec = { h[1], h[2], false, h[3], h[4], h[5], 0, 0, 0, 0, 0, '', h[6] or '', -1, -1, -1, '', -1, -1, -1 }
  rec[F_STATE] = nil
  rec.hpri, rec.hdelay, rec.praw, rec.oraw, rec.preserved = h[2], h[3], pv or false, ov or false, -1
  rec.tc = h[7] or ''
  rec.ufor = h[8] or 0
  if pv then
    local p = cmsgpack.unpack(pv)
    for i = #p + 1, NPAST do
      p[i] = PAST_DEFAULTS[i]
    end
    rec[7], rec[8], rec[9], rec[10], rec[11] = p[1], p[2], p[3], p[4], p[5]
    if p[6] >= 0 then rec[F_PRI] = p[6] end
    if p[7] >= 0 then rec[F_DELAY] = p[7] end
    rec[14], rec[15], rec[16], rec[17], rec[18], rec[19], rec[20] = p[8], p[9], p[10], p[11], p[12], p[13], p[14]
    rec.preserved = p[8]
    if p[15] and p[15] > 0 then
      -- a kept job (see "Kept jobs"): how it ended, and when (ms after the put)
      rec.ended, rec.endedat = p[15], p[16] or 0
    end
  end
  if ov then
    local i = string.find(ov, ':', 1, true)
    rec[F_STATE] = RESERVED
    rec[F_RESERVED_AT] = tonumber(string.sub(ov, 1, i - 1))
    rec[F_OWNER] = string.sub(ov, i + 1)
    rec[F_RESERVES] = rec[F_RESERVES] + 1
  end
  return rec, body
end

-- load reads a live job: nil when there is none (a kept job is not live).
-- rec.behind is the id of the job held behind it, nil for none.
local function load(idh)
  local v = redis.call('HMGET', KEYS[2], idh, 'p' .. idh, 'o' .. idh, 'n' .. idh)
  if not v[1] then
    return nil
  end
  local rec, body = rec_of(v[1], v[2], v[3])
  if rec.ended then
    return nil
  end
  rec.behind = v[4] or nil
  return rec, body
end

-- job_state is the state of live job idh of T (a duplicate's, for a put).
local function job_state(T, idh)
  if redis.call('HEXISTS', KEYS[2], 'o' .. idh) == 1 then
    return RESERVED
  elseif redis.call('ZSCORE', T.r, idh) then
    return READY
  elseif redis.call('ZSCORE', T.d, idh) then
    return DELAYED
  end
  return BURIED
end

-- resolve fills in the state of a job of tube T that is not reserved: the
-- index that holds it.
local function resolve(T, idh, rec)
  if rec[F_STATE] == nil then
    if redis.call('ZSCORE', T.r, idh) then
      rec[F_STATE] = READY
    elseif redis.call('ZSCORE', T.d, idh) then
      rec[F_STATE] = DELAYED
    else
      rec[F_STATE] = BURIED
    end
  end
end

-- past_of is the stored past of rec (nil for none).
local function past_of(rec)
  local reserved = rec[F_STATE] == RESERVED
  local p = { rec[7], rec[8], rec[9], rec[10], rec[11], -1, -1,
    rec[14], rec[15], rec[16], rec[17], rec[18], rec[19], rec[20] }
  if reserved then
    p[1], p[8] = p[1] - 1, rec.preserved -- the reservation under way is in o
  end
  if rec[F_PRI] ~= rec.hpri then p[6] = rec[F_PRI] end
  if rec[F_DELAY] ~= rec.hdelay then p[7] = rec[F_DELAY] end
  local n = NPAST
  while n > 0 and p[n] == PAST_DEFAULTS[n] do
    n = n - 1
  end
  if n == 0 then
    return false
  end
  return cmsgpack.pack({ unpack(p, 1, n) })
end

-- save stores what changed of a job loaded with load (its record never
-- changes): its past and its reservation.
local function save(idh, rec)
  local pv = past_of(rec)
  local ov = false
  if rec[F_STATE] == RESERVED then
    ov = rec[F_RESERVED_AT] .. ':' .. rec[F_OWNER]
  end
  local hset, hdel = {}, {}
  if pv ~= rec.praw then
    stage(hset, hdel, 'p' .. idh, pv)
  end
  if ov ~= rec.oraw then
    stage(hset, hdel, 'o' .. idh, ov)
  end
  if rec.ev then
    stage(hset, hdel, 'e' .. idh, rec.ev)
    rec.ev = nil
  end
  write_fields(KEYS[2], hset, hdel)
  rec.praw, rec.oraw = pv, ov
  if not ov then
    rec.preserved = rec[F_RESERVED_AT]
  end
end

-- stamp sets history field f of rec to at (ms).
local function stamp(rec, f, at)
  local d = at - rec[F_CREATED]
  if d < 0 then
    d = 0
  end
  rec[f] = d
end

-- stamp_error records a release's or a bury's reason at now; an empty one
-- changes nothing.
local function stamp_error(rec, reason, now)
  if reason ~= '' then
    rec[F_ERROR] = reason
    stamp(rec, F_ERROR_AT, now)
  end
end

-- The bounds of a job's error history (e<id>): queue.MaxErrors and
-- queue.MaxErrorBytes.
local MAX_ERRORS, MAX_ERROR_BYTES = 10, 4096

-- stamp_attempt_error records a release's or a bury's reason at now as
-- stamp_error does, and appends it to the job's error history, which the
-- next save writes (with the past, in one HSET). An empty reason changes
-- nothing and reads nothing.
local function stamp_attempt_error(idh, rec, reason, now)
  if reason == '' then
    return
  end
  stamp_error(rec, reason, now)
  local old = redis.call('HGET', KEYS[2], 'e' .. idh)
  local h = {}
  if old then
    h = cmsgpack.unpack(old)
  end
  -- Keep the newest entries that fit beside the new one (queue.AppendError).
  local n, size, from = 1, #reason, #h + 1
  while from > 1 and n < MAX_ERRORS and size + #h[from - 1] <= MAX_ERROR_BYTES do
    from = from - 3
    n, size = n + 1, size + #h[from + 2]
  end
  local out = {}
  for i = from, #h do
    out[#out + 1] = h[i]
  end
  out[#out + 1] = rec[F_ERROR_AT]
  out[#out + 1] = rec[F_RESERVES]
  out[#out + 1] = reason
  rec.ev = cmsgpack.pack(out)
end

-- errors_reply is a job's error history (the e<id> field's value, or
-- nil) as a reply: {at (Unix ms), attempt, reason, ...}, oldest first.
local function errors_reply(rec, ev)
  if not ev then
    return {}
  end
  local h = cmsgpack.unpack(ev)
  for i = 1, #h, 3 do
    h[i] = rec[F_CREATED] + h[i]
  end
  return h
end

-- stamped returns the time (ms) in history field f of rec, or 0 for never.
local function stamped(rec, f)
  if rec[f] < 0 then
    return 0
  end
  return rec[F_CREATED] + rec[f]
end

-- tube_name is the name of tube number ix of this tag.
local function tube_name(ix)
  return redis.call('HGET', KEYS[1], 't:' .. ix)
end

-- number gives tube T a number in its tag, if it has none.
local function number(T, tube)
  if not T.ix then
    set(T, 'ix', redis.call('HINCRBY', KEYS[1], 'tix', 1))
    redis.call('HSET', KEYS[1], 't:' .. T.ix, tube)
  end
end

-- Job IDs are sequence * 256 + tag. Sequence numbers come from one counter
-- (the put's ID key: on one Redis, a key of its own, so IDs increase in put
-- order across every tube; on a cluster, the tag's m, so across tags they
-- follow the masters' clocks to the millisecond). No sequence number is
-- below Redis's clock, IDS_PER_MS for each millisecond since ID_EPOCH_MS:
-- so one that Redis issued and then lost (a failover, a restart, a flush)
-- is not issued again once the clock has moved past it, which is at once
-- while puts keep below IDS_PER_MS a millisecond on the counter, and after
-- the time they ran ahead of it otherwise. 2^45 sequence numbers last
-- until 2060.
local ID_EPOCH_MS = 1767225600000 -- 2026-01-01T00:00:00Z
local IDS_PER_MS = 32

-- alloc_ids reserves n sequence numbers in hash key ck (field id) at now
-- (ms) and returns the one before the first.
local function alloc_ids(ck, n, now)
  local last = redis.call('HINCRBY', ck, 'id', n) - n
  local floor = (now - ID_EPOCH_MS) * IDS_PER_MS
  if last < floor then
    -- The counter is behind the clock (a quiet spell, or a counter lost
    -- with its master): it jumps to the clock.
    last = floor
    redis.call('HSET', ck, 'id', last + n)
  end
  return last
end

local function idnum(idh)
  return tonumber(idh, 16)
end

local function idhex(id)
  return string.format('%014x', id)
end

-- Groups (docs/tube-limits.md, "Groups"). The tube of group g of tube p
-- is "p;g", on p's tag; tubekeys marks it with T.fam = p. Per family p:
--   <base>g:<p>   the rotation: a sorted set of the tubes of the family
--                 with ready jobs (the groups', and p itself while it has
--                 groups), scored by the turn each entered or was last
--                 served at; a reserve of p takes from the lowest it may
--   <base>gd:<p>  the groups' due times: tube -> nd (ms), so that a reserve
--                 of p applies what is due in its groups
--   <base>gm:<p>  the groups that exist: tube -> 1
--   m gt:<p>      the family's turn counter; m gr:<p> its groups' reserved
--                 jobs (p's cap counts them with p's own)
--   <base>lt:<group>  a group's rate state (µs), under its tube's group
--                 template, expiring when the rate is whole (gtat_write)
-- p's hash carries fm = 1 while it may have groups (set when p or a group
-- is made), so that a reserve of a tube without groups pays nothing.

local function fam_key(kind, p)
  return string.sub(KEYS[1], 1, -2) .. kind .. ':' .. p
end

-- fam_ready notes that group tube T has ready jobs: it enters its family's
-- rotation at the next turn if it is not there.
-- A tube with groups (fm) takes its turns with its own name.
local function fam_join(p, name)
  local G = fam_key('g', p)
  if not redis.call('ZSCORE', G, name) then
    redis.call('ZADD', G, redis.call('HINCRBY', KEYS[1], 'gt:' .. p, 1), name)
  end
end

local function fam_ready(T)
  if T.inrot then
    return
  end
  if T.fam then
    fam_join(T.fam, T.name)
    T.inrot = true
  elseif T.hasfam then
    local name = string.sub(T.t, #KEYS[1] + 2)
    fam_join(name, name)
    T.inrot = true
  end
end

-- fam_reserved counts d more reserved jobs of group tube T.
local function fam_reserved(T, d)
  if T.fam and d ~= 0 then
    redis.call('HINCRBY', KEYS[1], 'gr:' .. T.fam, d)
  end
end

-- fam_due notes group tube T's next due time (ms), or that it has none.
local function fam_due(T, at)
  if T.fam then
    if at then
      redis.call('ZADD', fam_key('gd', T.fam), at, T.name)
    else
      redis.call('ZREM', fam_key('gd', T.fam), T.name)
    end
  end
end

-- wake tells waiting reservers that tube T may have a job: for a group's
-- tube, its tube's waiters too, whose reserves serve the group.
local function wake(T)
  redis.call('SPUBLISH', T.t .. ':w', '1')
  if T.fam then
    redis.call('SPUBLISH', string.sub(KEYS[1], 1, -2) .. 't:' .. T.fam .. ':w', '1')
  end
end

-- LIMITS caches what each limits spec seen says, parsed: the library's
-- state, kept from one call to the next, so a limited tube's spec is
-- parsed once, not in every call (at most 256 specs; then it starts over).
local LIMITS, NLIMITS = {}, 0

-- limit_parse returns spec read: cap, and for a rate iv (µs between
-- reserves) and burst; then the group template's gcap, giv and gburst.
local function limit_parse(spec)
  local p = LIMITS[spec]
  if p then
    return p
  end
  local ev, per, burst, cap, rest = string.match(spec, '^(%d+):(%d+):(%d+):(%d+)(.*)$')
  ev, per = tonumber(ev), tonumber(per)
  p = { cap = tonumber(cap) }
  if ev > 0 then
    p.iv = math.floor((per + ev - 1) / ev) -- exact: per + ev < 2^53
    p.burst = tonumber(burst)
  end
  if rest ~= '' then
    -- the group template: the same four for each group
    local gev, gper, gburst, gcap = string.match(rest, '^:(%d+):(%d+):(%d+):(%d+)$')
    gev, gper = tonumber(gev), tonumber(gper)
    p.gcap = tonumber(gcap)
    if gev > 0 then
      p.giv = math.floor((gper + gev - 1) / gev)
      p.gburst = tonumber(gburst)
    end
  end
  if NLIMITS >= 256 then
    LIMITS, NLIMITS = {}, 0
  end
  LIMITS[spec], NLIMITS = p, NLIMITS + 1
  return p
end

-- wake_in tells waiting reservers that a job of tube T falls due in ms
-- (message 'd<ms>'): a listener wakes one of them then, rather than one
-- asking now to learn the time. For a group's tube, its tube's waiters
-- too, whose reserves serve the group.
local function wake_in(T, ms)
  redis.call('SPUBLISH', T.t .. ':w', 'd' .. ms)
  if T.fam then
    redis.call('SPUBLISH', string.sub(KEYS[1], 1, -2) .. 't:' .. T.fam .. ':w', 'd' .. ms)
  end
end

-- slot_freed is called before a reservation of T ends other than by its
-- job becoming ready (a delete, a bury): when a reserve has found T at its
-- cap since the last freed place (limit_wait marks the tube's hash, cw),
-- a waiter may be waiting for this place, so T's waiters are woken.
-- Otherwise no reserve is waiting for a place, and nothing is sent.
local function slot_freed(T)
  if T.fam then
    -- a group's place: its tube's cap or group template may hold a waiter
    local spec = redis.call('HGET', KEYS[1], 'l:' .. T.fam)
    if spec then
      local p = limit_parse(spec)
      if p.cap > 0 or (p.gcap or 0) > 0 then
        wake(T)
      end
    end
    return
  end
  if T.nx then
    T.nx = T.nx - 1
  end
  if T.cw then
    -- a reserve found T at its cap (limit_wait): one waiting may take this place
    wake(T)
    set(T, 'cw', false)
    T.cw = nil
  end
end

-- paused_until returns the end of T's pause (ms), or nil when not paused at now.
local function paused_until(T, now)
  if T.pu and T.pu > now then
    return T.pu
  end
  return nil
end

-- gc forgets tube T when it holds no job, no reference and no pause; its
-- counters start again from zero if it is used again.
local function gc(T, tube, now)
  if T.live > 0 or T.rf > 0 or paused_until(T, now) then
    return
  end
  if T.kn == nil then
    -- opened without its kept jobs' count (a group's tube a reserve reached)
    T.kn = num(redis.call('HGET', T.t, 'kn')) or 0
  end
  if T.kn > 0 then
    return -- it keeps finished jobs
  end
  if T.tat then
    -- The rate's state outlives the tube, in the tag's m, for when it comes back.
    redis.call('HSET', KEYS[1], 'lt:' .. tube, T.tat)
  end
  if T.total > 0 then
    -- Its jobs ever put count on in the tag's total (Stats' TotalJobs).
    redis.call('HINCRBY', KEYS[1], 'gone', T.total)
  end
  redis.call('DEL', T.t, T.u)
  redis.call('ZREM', KEYS[3], tube)
  if T.fam then
    redis.call('HDEL', fam_key('gm', T.fam), T.name)
    redis.call('ZREM', fam_key('g', T.fam), T.name)
    redis.call('ZREM', fam_key('gd', T.fam), T.name)
  end
  if T.ix then
    redis.call('HDEL', KEYS[1], 't:' .. T.ix)
  end
  T.nd, T.pu, T.total, T.deletes, T.ix, T.dirty = nil, nil, 0, 0, nil, {}
end

-- free is gc for a call in which the last job or the last reference of T
-- went: a tube that holds neither is gone, its pause with it, as beanstalkd
-- frees a tube.
local function free(T, tube, now)
  if T.live == 0 and T.rf == 0 and (T.kn or 0) == 0 then
    T.pu = nil
  end
  gc(T, tube, now)
end

-- settle ends a call that took jobs out of tube T, which held had jobs at
-- its start: if it held any, the last may have gone (free), else only gc
-- applies.
local function settle(T, tube, now, had)
  if had > 0 then
    free(T, tube, now)
  else
    gc(T, tube, now)
  end
end

-- register records tube T in the tag's registry if it is new, with its
-- creation time in µs (the order Tubes lists them in).
local function register(T, tube, us)
  if T.live == 0 and T.rf == 0 then
    if redis.call('ZADD', KEYS[3], 'NX', us, tube) == 1 then
      if T.fam then
        -- A new group: its tube, if it exists, may now have groups.
        redis.call('HSET', fam_key('gm', T.fam), T.name, 1)
        local pt = string.sub(KEYS[1], 1, -2) .. 't:' .. T.fam
        if redis.call('EXISTS', pt) == 1 then
          redis.call('HSET', pt, 'fm', 1)
          if redis.call('ZCARD', pt .. ':r') > 0 then
            fam_join(T.fam, T.fam) -- its ready jobs take the first turn
          end
        end
      elseif redis.call('EXISTS', fam_key('gm', tube)) == 1 then
        set(T, 'fm', 1)
        T.hasfam = '1'
      end
      -- A new tube: it takes the limits and the retention its name has in the tag.
      local lk = redis.call('HMGET', KEYS[1], 'l:' .. tube, 'k:' .. tube)
      local lim = lk[1]
      if lk[2] then
        set(T, 'kr', lk[2])
        T.kr = tonumber(lk[2])
      end
      if lim then
        set(T, 'lim', lim)
        T.lim = lim
        local tat = redis.call('HGET', KEYS[1], 'lt:' .. tube)
        if tat then
          set(T, 'tat', tat)
          T.tat = tonumber(tat)
        end
      end
    end
  end
end

-- schedule notes that something in T falls due at (ms), keeping nd a lower
-- bound of the tube's next due transition.
local function schedule(T, at)
  if T.nd == nil or at < T.nd then
    set(T, 'nd', at)
    fam_due(T, at)
  end
end

-- to_ready moves a job to the ready set (its record must be saved by the caller).
local function to_ready(T, idh, rec)
  rec[F_STATE] = READY
  rec[F_OWNER] = ''
  redis.call('ZADD', T.r, rec[F_PRI], idh)
  fam_ready(T)
end

-- head_score returns the score of the first member of a sorted set, or nil.
local function head_score(key)
  local h = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if #h > 0 then
    return tonumber(h[2])
  end
  return nil
end

-- next_due is the exact time (ms) of T's next due transition, or nil. It
-- reads the heads of d and x once a call: T.ndx keeps what they said
-- (false: nothing), which reserve_rec keeps true and a reservation's end
-- forgets.
local function next_due(T, now)
  local nd = paused_until(T, now)
  if T.ndx == nil then
    local v = false
    for _, k in ipairs({ T.d, T.x }) do
      local h = head_score(k)
      if h and h < HELD and (not v or h < v) then
        v = h
      end
    end
    T.ndx = v
  end
  if T.ndx and (nd == nil or T.ndx < nd) then
    nd = T.ndx
  end
  return nd
end

-- tick applies the transitions that are due in tube T at now (ms): delayed
-- jobs whose time has come become ready, reservations whose TTR ran out end
-- (counting a timeout), a pause that ended is cleared. At most PROMOTE_LIMIT
-- jobs of each kind per call. While now is before nd nothing can be due, and
-- tick costs nothing beyond open's HMGET.
local function tick(T, tube, now)
  if T.nd == nil or T.nd > now then
    return
  end
  T.ndx = nil
  local due = redis.call('ZRANGE', T.d, '-inf', now, 'BYSCORE', 'LIMIT', 0, PROMOTE_LIMIT)
  if #due > 0 then
    -- A due job's record is read for its priority (its past's, if it
    -- changed) and not written: one read and one index write for them all.
    local f = {}
    for i, idh in ipairs(due) do
      f[2 * i - 1], f[2 * i] = idh, 'p' .. idh
    end
    local v = redis.call('HMGET', KEYS[2], unpack(f))
    local z = {}
    for i, idh in ipairs(due) do
      local _, h = cmsgpack.unpack_one(v[2 * i - 1])
      local pri = h[2]
      if v[2 * i] then
        local p = cmsgpack.unpack(v[2 * i])
        if p[6] and p[6] >= 0 then
          pri = p[6]
        end
      end
      z[2 * i - 1], z[2 * i] = pri, idh
    end
    -- A reserve in this call takes some of them at once: it reads what was
    -- read here (a record is never rewritten, and a past only by
    -- transitions a reserve does not make).
    T.seen = v
    T.seenix = {}
    for i, idh in ipairs(due) do
      T.seenix[idh] = i
    end
    redis.call('ZADD', T.r, unpack(z))
    fam_ready(T)
    redis.call('ZREM', T.d, unpack(due))
  end
  -- The reserved set's head says whether a TTR has run out, and is the
  -- reserved part of the next due time when none has.
  local xh = head_score(T.x)
  local exp = {}
  if xh and xh <= now then
    exp = redis.call('ZRANGE', T.x, '-inf', now, 'BYSCORE', 'LIMIT', 0, PROMOTE_LIMIT, 'WITHSCORES')
  end
  local ended = {}
  for i = 1, #exp, 2 do
    local idh = exp[i]
    local rec = load(idh)
    rec[F_TIMEOUTS] = rec[F_TIMEOUTS] + 1
    stamp(rec, F_TIMEDOUT_AT, tonumber(exp[i + 1])) -- when the TTR ran out, not when it was seen
    to_ready(T, idh, rec)
    save(idh, rec)
    ended[#ended + 1] = idh
  end
  if #ended > 0 then
    redis.call('ZREM', T.x, unpack(ended))
    fam_reserved(T, -#ended)
    redis.call('HINCRBY', KEYS[1], 'timeouts', #ended)
    redis.call('HINCRBY', T.t, 'to', #ended)
    xh = head_score(T.x)
  end
  local dh = head_score(T.d)
  T.ndx = false
  if dh and dh < HELD then T.ndx = dh end
  if xh and (not T.ndx or xh < T.ndx) then T.ndx = xh end
  if T.pu and T.pu <= now then
    set(T, 'pu', false)
    set(T, 'pl', false)
  end
  -- nd becomes exact again.
  local nd = next_due(T, now)
  set(T, 'nd', nd or false)
  fam_due(T, nd)
  if not nd then
    gc(T, tube, now)
  end
end

-- open_tube opens the one tube of a script on a single tube (tubekeys(1),
-- named tube) and applies what is due in it: it returns T and the time
-- (µs, ms) as open does.
local function open_tube(tube)
  local T = tubekeys(1)
  local us, now = open({ T })
  tick(T, tube, now)
  return T, us, now
end

-- unindex takes a job out of whichever index holds it.
local function unindex(T, idh, rec)
  local s = rec[F_STATE]
  if s == READY then
    redis.call('ZREM', T.r, idh)
  elseif s == DELAYED then
    redis.call('ZREM', T.d, idh)
    T.ndx = nil
  elseif s == RESERVED then
    redis.call('ZREM', T.x, idh)
    T.ndx = nil
    fam_reserved(T, -1)
  else
    redis.call('ZREM', T.b, idh)
  end
end

-- reserve_rec marks a job reserved by owner until now+TTR and returns the
-- end of TTR. The reserved set x and the record's owner are the whole
-- ledger: what an owner holds is found from them when asked (reservations.lua).
-- reserved puts job idh of tube T in the reserved set until deadline (ms)
-- and counts the reservation in what the call keeps of T.
local function reserved(T, idh, deadline)
  redis.call('ZADD', T.x, deadline, idh)
  T.reserved = (T.reserved or 0) + 1 -- the tube's count, added by flush
  if T.nx then
    T.nx = T.nx + 1 -- the count of T.x that a cap reads (limit_wait)
  end
  if T.ndx ~= nil and (not T.ndx or deadline < T.ndx) then
    T.ndx = deadline
  end
  fam_reserved(T, 1)
  schedule(T, deadline)
end

local function reserve_rec(T, idh, rec, body, owner, now)
  rec[F_STATE] = RESERVED
  rec[F_OWNER] = owner
  rec[F_RESERVES] = rec[F_RESERVES] + 1
  stamp(rec, F_RESERVED_AT, now)
  local deadline = now + rec[F_TTR]
  reserved(T, idh, deadline)
  save(idh, rec)
  return deadline
end

-- take reserves ready job idh of tube T, just taken from T.r with
-- priority pri, for owner at now: its record is read, not written; its
-- reservation is o<id>. It returns the job as jobreply does.
local function take(T, idh, pri, owner, now, tube)
  local rv, pv
  local i = T.seenix and T.seenix[idh]
  if i then
    rv, pv = T.seen[2 * i - 1], T.seen[2 * i]
  else
    local v = redis.call('HMGET', KEYS[2], idh, 'p' .. idh)
    rv, pv = v[1], v[2]
  end
  local h, body = cmsgpack.unpack(rv)
  local ended = 0
  if pv then
    ended = (cmsgpack.unpack(pv))[1]
  end
  local deadline = now + h[4]
  reserved(T, idh, deadline)
  local at = now - h[5]
  if at < 0 then
    at = 0
  end
  redis.call('HSET', KEYS[2], 'o' .. idh, at .. ':' .. owner)
  return { idnum(idh), tube, pri, h[4], ended + 1, body, h[6] or '', deadline - now, h[7] or '' }
end

-- Tube limits (docs/tube-limits.md). A tube T opened with limits has T.lim,
-- the spec "events:per µs:burst:cap"; limit_open reads it into T.cap, and,
-- for a rate, T.iv (µs between reserves), T.burst and T.tat (the theoretical
-- arrival time, µs, from m's lt:<tube>).

-- limit_open prepares the limits of tube T, if it has any, and reports
-- whether it has.
local function limit_open(T, tube)
  if not T.lim then
    return false
  end
  local p = limit_parse(T.lim)
  T.cap, T.gcap, T.giv, T.gburst = p.cap, p.gcap, p.giv, p.gburst
  if p.iv then
    T.iv, T.burst = p.iv, p.burst
    T.tat = T.tat or 0
  end
  return true
end

-- gcra_wait is how long (µs) until a rate of one reserve per iv µs with
-- burst lets one more pass at us, given its theoretical arrival time tat
-- (gcra_lib.lua): 0 when it does now.
local function gcra_wait(tat, iv, burst, us)
  return gcra_delay(tat, us, iv, burst * iv)
end

-- cap_reached marks tube T as found at its cap, so that the next place
-- freed wakes its waiters (slot_freed).
local function cap_reached(T)
  if not T.cw and T.ix then
    set(T, 'cw', 1)
    T.cw = '1'
  end
end

-- limit_wait is how long (µs) until T's limits allow one more reserve at
-- us: 0 when they do now, -1 when the cap holds T back (a reservation must
-- end first: a TTR's end, which next_due knows, or a delete, bury or
-- release, which wakes the tube). others counts reservations the cap
-- counts beside T's own (its groups', for a tube with groups; nil: none).
local function limit_wait(T, us, others)
  if T.cap > 0 then
    if not T.nx then
      T.nx = redis.call('ZCARD', T.x) -- then kept by reserve_rec and delete_one
    end
    if T.nx + (others or 0) >= T.cap then
      cap_reached(T)
      return -1
    end
  end
  if T.iv then
    return gcra_wait(T.tat, T.iv, T.burst, us)
  end
  return 0
end

-- limit_charge counts one reserve of T against its rate at us.
local function limit_charge(T, us)
  if T.iv then
    T.tat = gcra_charge(T.tat, us, T.iv)
    T.tatdirty = true
  end
end

-- limit_flush notes T's rate state, if it changed, among the fields flush
-- writes; call it before gc, which keeps the state of a tube that goes.
local function limit_flush(T)
  if T.tatdirty then
    set(T, 'tat', T.tat)
    T.tatdirty = nil
  end
end

-- A group's rate state (docs/tube-limits.md, "Groups") is its theoretical
-- arrival time, µs, in a key of its own on its tube's tag, <base>lt:<group
-- tube>, that expires when the rate is whole again (at the TAT: a state at
-- or before now says what no state says), so Redis drops it by time alone
-- and a tube grouped by customer keeps state only for the customers served
-- within a burst. gtat_read returns it (0 when there is none).
local function gtat_read(name)
  return tonumber(redis.call('GET', fam_key('lt', name)) or '0')
end

-- gtat_write stores group tube name's rate state tat (µs, after us) until
-- the rate is whole again. The expiry is relative to Redis's clock: with
-- an injected clock (tests), which need not follow Redis's, the state is
-- kept a minute longer, so a test's real time cannot end it early.
local function gtat_write(name, tat, us)
  local ms = math.floor((tat - us + 999) / 1000)
  if ARGV[1] ~= '' then
    ms = ms + 60000
  end
  redis.call('SET', fam_key('lt', name), tat, 'PX', ms)
end

-- jobreply is how a job travels back to Go: id, tube, pri, ttr ms, reserves,
-- body, unique key ('' for none), ms left on the reservation (left: a
-- reserve's, else 0), trace context ('' for none).
local function jobreply(idh, rec, body, tube, left)
  return { idnum(idh), tube, rec[F_PRI], rec[F_TTR], rec[F_RESERVES], body, rec[F_UKEY], left or 0, rec.tc }
end

-- Held jobs (docs/redis-data-model.md, "Held jobs"). A schedule with the
-- overlap policy buffer_one puts a tick's job, while the previous job idh
-- is reserved, held behind it (sc_fire.lua): in d with the score HELD, and
-- named by idh's field n<idh> of j. Every end of idh (a delete or finish,
-- a bury, a cancel; kept or not) removes n<idh> with its other fields and
-- calls unbuffer; a release or a timeout leaves the held job held. A kick
-- makes a held job ready as any delayed job.

-- unbuffer makes ready the job hh (hex; nil for none) held behind a job
-- of T that ended, when it is still held, and wakes T's waiters.
local function unbuffer(T, hh)
  if not hh then
    return
  end
  local sc = redis.call('ZSCORE', T.d, hh)
  if not sc or tonumber(sc) < HELD then
    return
  end
  local _, h = cmsgpack.unpack_one(redis.call('HGET', KEYS[2], hh))
  redis.call('ZREM', T.d, hh)
  redis.call('ZADD', T.r, h[2], hh)
  fam_ready(T)
  wake(T)
end

-- Kept jobs (docs/redis-data-model.md, "Kept jobs"). A tube with a
-- retention (kr in its hash, ms; m's k:<tube> while it does not exist)
-- keeps the jobs that end in it until the retention has passed:
--   T:k        sorted set: kept job id -> the time it is dropped (ms)
--   <base>kt   per-tag sorted set: tube -> a time (ms) no later than the
--              first drop of T:k, so that dropkept finds the due tubes
--   j p<id>    the past gains element 15, how the job ended (1 finished;
--              2 cancelled), and 16, when (ms after the put)
--   j f<id>    the result, when it has one
--   T:u        a kept job's key maps to '<id>k<window end>:<drop>' (ms;
--              window end 0 for none) while the job holds it: a put with
--              the key is its duplicate only inside the window, or when it
--              asks UniqueKept before the drop
-- A kept job is out of r/d/x/b and live, has no o<id>, and load does not
-- see it; kn in T's hash counts them, and a tube lives while kn > 0.
local KEPT_FINISHED, KEPT_CANCELLED = 1, 2

-- keep_index names the tag's index of tubes with kept jobs.
local function keep_index()
  return string.sub(KEYS[1], 1, -2) .. 'kt'
end

-- keep_one keeps the job idh of T (loaded, resolved and out of its
-- index) at now (ms) for T's retention, with result ('' or nil: none);
-- how is how it ended (nil: KEPT_FINISHED).
local function keep_one(T, tube, idh, rec, result, now, how)
  local p = { rec[7], rec[8], rec[9], rec[10], rec[11], -1, -1,
    rec[14], rec[15], rec[16], rec[17], rec[18], rec[19], rec[20], how or KEPT_FINISHED, math.max(now - rec[F_CREATED], 0) }
  if rec[F_PRI] ~= rec.hpri then p[6] = rec[F_PRI] end
  if rec[F_DELAY] ~= rec.hdelay then p[7] = rec[F_DELAY] end
  if result and result ~= '' then
    redis.call('HSET', KEYS[2], 'p' .. idh, cmsgpack.pack(p), 'f' .. idh, result)
  else
    redis.call('HSET', KEYS[2], 'p' .. idh, cmsgpack.pack(p))
  end
  if rec.behind then
    redis.call('HDEL', KEYS[2], 'o' .. idh, 'n' .. idh)
  elseif rec.oraw then
    redis.call('HDEL', KEYS[2], 'o' .. idh)
  end
  local w = 0
  if rec.ufor > 0 then
    w = rec[F_CREATED] + rec.ufor
  end
  local drop = now + (T.kr or 0)
  if not T.kr or T.kr <= 0 then
    drop = w -- kept while its key's window holds, not beyond
  end
  drop = math.max(drop, w)
  if rec[F_UKEY] ~= '' then
    redis.call('HSET', T.u, rec[F_UKEY], idh .. 'k' .. w .. ':' .. drop)
  end
  redis.call('ZADD', T.t .. ':k', drop, idh)
  redis.call('ZADD', keep_index(), 'LT', drop, tube)
  set(T, 'kn', (T.kn or 0) + 1)
end

-- ttr_ran_out reports, for a reserved job idh of T and a caller that has
-- not ticked T (now given), whether its TTR has run out: the caller applies
-- the due transitions first.
local function ttr_ran_out(T, idh, now)
  return now and not (T.nd and T.nd > now) and tonumber(redis.call('ZSCORE', T.x, idh)) <= now
end

-- drop_fields removes a deleted job's fields and frees its unique key.
local function drop_fields(T, idh, ukey)
  redis.call('HDEL', KEYS[2], idh, 'p' .. idh, 'o' .. idh, 'e' .. idh, 'n' .. idh)
  if ukey and ukey ~= '' then
    redis.call('HDEL', T.u, ukey)
  end
end

-- delete_loaded deletes a job of tube T for owner: 1 deleted, 2 kept (the
-- tube has a retention: keep_one, with result, '' or nil for none), 0 no
-- such job, -1 reserved by another owner, -2 the job is in another tube;
-- given now (ms) by a caller that has not ticked T, -3 when the job's
-- reservation has run out (tick, then call again).
local function delete_loaded(T, tube, idh, owner, now, result)
  local rec = load(idh)
  if not rec then
    return 0
  end
  if rec[F_TUBE] ~= T.ix then
    return -2
  end
  if rec[F_STATE] == RESERVED and ttr_ran_out(T, idh, now) then
    return -3
  end
  if rec[F_STATE] == RESERVED and rec[F_OWNER] ~= owner then
    return -1
  end
  if rec[F_STATE] == RESERVED then
    slot_freed(T)
  end
  resolve(T, idh, rec)
  unindex(T, idh, rec)
  set(T, 'deletes', T.deletes + 1)
  set(T, 'live', T.live - 1)
  if T.kr and T.kr > 0 or rec.ufor > 0 and rec[F_CREATED] + rec.ufor > T.now then
    keep_one(T, tube, idh, rec, result, T.now)
    unbuffer(T, rec.behind)
    return 2
  end
  drop_fields(T, idh, rec[F_UKEY])
  unbuffer(T, rec.behind)
  return 1
end

-- delete_one deletes a job of tube T for owner, as delete_loaded says. A
-- tube that keeps no job (no retention, no kept job) takes a shorter way:
-- it reads only the record's head and the reservation (not the body, not
-- the past), and finds the index that holds the job by removing it (a
-- reserved job is in x, any other is tried in r, d and b in turn).
local function delete_one(T, tube, idh, owner, now, result)
  if (T.kr and T.kr > 0) or (T.kn or 0) > 0 then
    return delete_loaded(T, tube, idh, owner, now, result)
  end
  local v = redis.call('HMGET', KEYS[2], idh, 'o' .. idh, 'n' .. idh)
  if not v[1] then
    return 0
  end
  local _, h = cmsgpack.unpack_one(v[1])
  if h[1] ~= T.ix then
    return -2
  end
  if h[8] and h[8] > 0 and h[5] + h[8] > T.now then
    -- a window on its key holds: it is kept until the window closes
    return delete_loaded(T, tube, idh, owner, now, result)
  end
  local ov = v[2]
  if ov then
    if ttr_ran_out(T, idh, now) then
      return -3
    end
    if string.sub(ov, string.find(ov, ':', 1, true) + 1) ~= owner then
      return -1
    end
    slot_freed(T)
    redis.call('ZREM', T.x, idh)
    T.ndx = nil
    fam_reserved(T, -1)
  elseif redis.call('ZREM', T.r, idh) == 0 then
    if redis.call('ZREM', T.d, idh) == 1 then
      T.ndx = nil
    else
      redis.call('ZREM', T.b, idh)
    end
  end
  drop_fields(T, idh, h[6])
  set(T, 'deletes', T.deletes + 1)
  set(T, 'live', T.live - 1)
  unbuffer(T, v[3] or nil)
  return 1
end

-- find loads a job of tube T: the record and body, or nil and the status
-- to return (0 no such job, -2 in another tube).
local function find(T, idh)
  local rec, body = load(idh)
  if not rec then return nil, 0 end
  if rec[F_TUBE] ~= T.ix then return nil, -2 end
  resolve(T, idh, rec)
  return rec, body
end

-- held loads a job that owner must hold in tube T: the record and body, or
-- nil and the status to return (0, -2 as find, -1 not reserved by owner).
local function held(T, idh, owner)
  local rec, body = find(T, idh)
  if rec and (rec[F_STATE] ~= RESERVED or rec[F_OWNER] ~= owner) then return nil, -1 end
  return rec, body
end

-- unhold ends the reservation of job idh of T: out of the tube's reserved
-- set. The caller gives the job its next state.
local function unhold(T, idh)
  redis.call('ZREM', T.x, idh)
  T.ndx = nil
  fam_reserved(T, -1)
end

-- HELD_CHUNK bounds the ids one HMGET of held_by reads.
local HELD_CHUNK = 500

-- held_by calls each(tube, id hex, end of TTR ms) for every job of this tag
-- reserved by an owner for which match(owner) is true, where every such
-- owner contains the string needle (a record without it is not decoded): the reserved set of
-- every tube of the tag (registry KEYS[3]; the keys are the tubes' own, in
-- this tag's slot), each job's owner read from its record. This is how the
-- ledger is read: nothing but the reserved set and the record's owner is
-- written when a job is reserved.
local function held_by(needle, match, each)
  local base = string.sub(KEYS[1], 1, -2) -- KEYS[1] is <base>m
  for _, tube in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    local x = redis.call('ZRANGE', base .. 't:' .. tube .. ':x', 0, -1, 'WITHSCORES')
    for c = 1, #x, 2 * HELD_CHUNK do
      local ids = {}
      for i = c, math.min(c + 2 * HELD_CHUNK - 1, #x), 2 do
        ids[#ids + 1] = x[i]
      end
      local ofs = {}
      for k, v in ipairs(ids) do
        ofs[k] = "o" .. v
      end
      local vs = redis.call('HMGET', KEYS[2], unpack(ofs))
      for k, v in ipairs(ids) do
        local o = vs[k]
        if o and string.find(o, needle, 1, true) then
          local owner = string.sub(o, string.find(o, ':', 1, true) + 1)
          if match(owner) then
            each(tube, v, tonumber(x[c + 2 * (k - 1) + 1]))
          end
        end
      end
    end
  end
end

-- cancel_job cancels live job idh of tube T (rec loaded and resolved): it
-- is removed, as a delete removes it (kept, when the tube keeps finished
-- jobs: ended by a cancel, reason its last error), a cancel counted in
-- the tube's cn, and when it was reserved its holder told on the tag's
-- cancel channel (<base>c): "<id> <reason>". It returns the state the job
-- was in. The caller frees the tube when it may be empty.
local function cancel_job(T, tube, idh, rec, reason, now)
  local was = rec[F_STATE]
  if was == RESERVED then
    slot_freed(T)
  end
  unindex(T, idh, rec)
  if T.kr and T.kr > 0 then
    stamp_error(rec, reason, now)
    keep_one(T, tube, idh, rec, nil, now, KEPT_CANCELLED)
  else
    redis.call('HDEL', KEYS[2], idh, 'p' .. idh, 'o' .. idh, 'e' .. idh, 'n' .. idh)
    if rec[F_UKEY] ~= '' then
      redis.call('HDEL', T.u, rec[F_UKEY])
    end
  end
  unbuffer(T, rec.behind)
  redis.call('HINCRBY', T.t, 'cn', 1)
  set(T, 'live', T.live - 1)
  if was == RESERVED then
    redis.call('SPUBLISH', string.sub(KEYS[1], 1, -2) .. 'c', idh .. ' ' .. reason)
  end
  return was
end

-- Debounce (put.lua; docs/keys.md). ov is a put's state of its debounces:
-- per job index i, deb[i] the put's {replace, extend, max wait ms,
-- duplicate live}, changed[i] 20 + the state of the job it debounced
-- after; for the earlier jobs of the call that a later one debounced,
-- delay[i], pri[i] and body[i] as it left them; wake when one became
-- ready. Job i's arguments are ARGV[4 + i * 6 ...] as put.lua reads them.

-- put_debounce_live applies (for put) job i's debounce to the live job idh of T, delayed
-- until sc (ms), and returns its state after.
local function put_debounce_live(T, now, ov, i, idh, sc)
  local b, a = ov.deb[i], 4 + i * 6
  local v = redis.call('HMGET', KEYS[2], idh, 'p' .. idh)
  local rec, body = rec_of(v[1], v[2], nil)
  rec[F_STATE] = DELAYED
  local at = sc
  if b[2] then
    at = now + tonumber(ARGV[a + 1])
    if b[3] > 0 and rec[F_CREATED] + b[3] < at then
      at = rec[F_CREATED] + b[3]
    end
    rec[F_DELAY] = math.max(at - now, 0)
  end
  if b[1] then
    rec[F_PRI], body = tonumber(ARGV[a]), ARGV[a + 5]
  end
  rec.hpri, rec.hdelay = rec[F_PRI], rec[F_DELAY]
  redis.call('HSET', KEYS[2], idh, pack_job(rec[F_TUBE], rec[F_PRI], rec[F_DELAY], rec[F_TTR], rec[F_CREATED], rec[F_UKEY], body, rec.tc, rec.ufor))
  save(idh, rec)
  if at <= now then
    redis.call('ZREM', T.d, idh)
    redis.call('ZADD', T.r, rec[F_PRI], idh)
    fam_ready(T)
    ov.wake = true
    return READY
  end
  redis.call('ZADD', T.d, at, idh)
  schedule(T, at)
  if at < sc then
    wake_in(T, at - now)
  end
  return DELAYED
end

-- put_debounce decides, for put, what job i, with a debounce, does with d, the job that
-- holds its key: an earlier job of this call (its index) or a live job of
-- T. It returns d when job i is not stored (a debounce of d, or a
-- duplicate), nil when it is.
local function put_debounce(T, now, ov, xfor, i, d)
  local b, a = ov.deb[i], 4 + i * 6
  if type(d) == 'number' then
    local delay = ov.delay[d] or tonumber(ARGV[4 + d * 6 + 1])
    if delay > 0 then
      if b[2] then
        delay = tonumber(ARGV[a + 1])
        if b[3] > 0 and b[3] < delay then
          delay = b[3]
        end
        ov.delay[d] = delay
      end
      if b[1] then
        ov.pri[d], ov.body[d] = ARGV[a], ARGV[a + 5]
      end
      ov.changed[i] = 20 + ((delay > 0) and DELAYED or READY)
      return d
    end
    if b[4] or (xfor[d] or 0) > 0 then
      return d
    end
    return nil
  end
  local sc = redis.call('ZSCORE', T.d, d)
  if sc and tonumber(sc) > now then
    ov.changed[i] = 20 + put_debounce_live(T, now, ov, i, d, tonumber(sc))
    return d
  end
  if b[4] then
    return d
  end
  local v = redis.call('HGET', KEYS[2], d)
  local off, h = cmsgpack.unpack_one(v)
  if h[8] and h[8] > 0 and h[5] + h[8] > now then
    return d -- its window holds
  end
  if #h == 6 then
    h[6] = nil
  else
    h[6] = ''
  end
  redis.call('HSET', KEYS[2], d, cmsgpack.pack(h) .. string.sub(v, off + 1))
  return nil
end

-- First pass: which jobs are duplicates of a live job (or of an earlier job of this call).
-- A kept job's key ('<id>k', see "Kept jobs" in lib.lua) makes no duplicate.
-- done flushes T and returns v: every script that opened T ends through it.
local function done(T, v)
  flush(T)
  return v
end

-- SC_FULL are the defaults of a schedule state's elements 9 and later
-- (see sc_set.lua), which a state stored before them lacks.
local SC_FULL = { false, 0, 0, 0, 0, '' }

-- sc_full fills in the elements of schedule state st that it lacks
-- (its tube, 9, is the caller's to fill), and returns st.
local function sc_full(st)
  for i = 10, #SC_FULL + 8 do
    if st[i] == nil then
      st[i] = SC_FULL[i - 8]
    end
  end
  return st
end

-- sc_append appends schedule state st (see sc_set.lua) to out as the
-- schedule scripts reply it: version, next, paused, fires, misfires,
-- skips, pause reason, last job id, the number of last fires, then theirs
-- (4 values each), and returns out.
local function sc_append(out, st)
  for i = 1, 5 do
    out[#out + 1] = st[i]
  end
  out[#out + 1] = st[13] or 0
  out[#out + 1] = st[14] or ''
  out[#out + 1] = st[10] or 0
  out[#out + 1] = #st[8] / 4
  for _, v in ipairs(st[8]) do
    out[#out + 1] = v
  end
  return out
end

-- sc_append_named appends to out, for each of names that is a schedule of
-- the tag's hash SC, its name, definition and body, then its state as
-- sc_append does, and returns out.
local function sc_append_named(out, SC, names)
  for _, name in ipairs(names) do
    local h = redis.call('HMGET', SC, 'd:' .. name, 's:' .. name, 'b:' .. name)
    if h[2] then
      out[#out + 1] = name
      out[#out + 1] = h[1]
      out[#out + 1] = h[3]
      sc_append(out, cmsgpack.unpack(h[2]))
    end
  end
  return out
end
