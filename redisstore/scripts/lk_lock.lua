#!lua
-- Lock: Acquire for a lock (a semaphore of limit 1).
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, lease (µs), and to wait in line: "1", place lease (µs)
-- Returns the fence (> 0) when granted, else minus the wait (µs): how long
-- until the lock may come free without a release.
--
-- A free lock with no keys is granted in three calls (the clock, one
-- EXISTS, one SET of h's one-holder form, with its expiry, and GET so that
-- its reply is a plain nil); a lock held in that form is refused in three
-- more (its form, its read, and, once a lease, its wake: until when its
-- release must wake waiters). Everything else is lk_acquire's, in the
-- general form.
local m, h, q = KEYS[1], KEYS[2], KEYS[3]
local now = lk_now(ARGV[1])
local token, ttl = ARGV[2], tonumber(ARGV[3])
local n = redis.call('EXISTS', h, m, q)
if n == 0 then
  redis.call('SET', h, lk_pack(now, now + ttl, 0, token), 'PX', math.floor(ttl / 1000) + 1000, 'GET')
  return now
end
if n == 1 and lk_form(h) == 'string' then
  local v = redis.call('GET', h)
  local f, e, w = lk_unpack(v)
  if e <= now then
    -- Free (its lease ended, or released, keeping its fence or its wake):
    -- a grant with the next fence. The wake passes on: acquires refused
    -- before may still wait (a wake-up wakes one waiter of a process).
    f = math.max(f + 1, now)
    redis.call('SET', h, lk_pack(f, now + ttl, w, token), 'PX', lk_ms(now, now + ttl, f))
    return f
  end
  if ARGV[4] ~= '1' then
    -- The caller may wait until this lease ends: its release wakes it.
    if w < e then
      redis.call('SET', h, lk_pack(f, e, e, lk_token(v)), 'KEEPTTL')
    end
    return -math.max(e - now, 1)
  end
end
return lk_acquire(m, h, q, KEYS[4], now, token, 1, ttl, ARGV[4] == '1', tonumber(ARGV[5]))
