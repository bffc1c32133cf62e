#!lua
-- Acquire: grant token a slot of the semaphore, or queue it.
-- KEYS: m, h, q, qe (see lk_lib.lua)
-- ARGV: now, token, limit, lease (µs), queue ("1" to wait in line), place lease (µs)
-- Returns the fence (> 0) when granted, else minus the wait (µs): how long
-- until a slot may come free without a release. A lock (limit 1) is
-- acquired by lk_lock.lua; this one runs for any limit.
return lk_acquire(KEYS[1], KEYS[2], KEYS[3], KEYS[4], lk_now(ARGV[1]), ARGV[2],
  tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == '1', tonumber(ARGV[6]))
