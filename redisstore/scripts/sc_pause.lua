#!lua
-- sc_pause: pauses or resumes a schedule. A resume clears the reason of a
-- pause on failure and forgets the buried job that caused it.
-- KEYS: sc, scd (see sc_set.lua)
-- ARGV: now (unused), name, 1 pause / 0 resume, next µs after a resume (-1: none)
-- Returns: {status, 0, definition, body, version, next, paused, fires, misfires, #last, last...}:
--          status 0 done, 1 no such schedule (nothing else returned).
local SC, SCD = KEYS[1], KEYS[2]
local name, paused, nxt = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local h = redis.call('HMGET', SC, 'd:' .. name, 's:' .. name, 'b:' .. name)
if not h[2] then
  return { 1 }
end
local st = cmsgpack.unpack(h[2])
if st[3] ~= paused then
  st[3] = paused
  if st[14] then
    if paused == 0 and st[14] ~= '' then
      -- the buried job that paused it is acknowledged: the next tick does
      -- not pause again for it
      st[10] = 0
    end
    st[14] = '' -- a pause by hand, or a resume, has no reason of its own
  end
  if paused == 0 then
    st[2] = nxt
  end
  st[1] = st[1] + 1
  redis.call('HSET', SC, 's:' .. name, cmsgpack.pack(st))
  if paused == 0 and st[2] >= 0 then
    redis.call('ZADD', SCD, st[2], name)
  else
    redis.call('ZREM', SCD, name)
  end
end
return sc_append({ 0, 0, h[1], h[3] }, st)
