#!lua
-- put: stores jobs in one tube partition.
-- KEYS: m j tubes, then the 6 keys of the tube (see lib.lua)
-- ARGV: now, tube, tag index (0-255), then 5 per job: pri, delay ms, ttr ms, unique key, body
-- Returns: a flat array, 2 per job: id, 1 if a live job held the unique key (its id is returned) else 0.
local us = clock(true)
local now = math.floor(us / 1000)
local T = tubekeys(1)
local tube, tag = ARGV[2], tonumber(ARGV[3])
local n = (#ARGV - 3) / 5
local out = {}
local stored = 0
tick(T, tube, now) -- a pause that ended may have ended the tube
local seq = tonumber(redis.call('HINCRBY', KEYS[1], 'seq', n)) - n
register(T, tube, us)
for i = 0, n - 1 do
  local a = 4 + i * 5
  local pri, delay, ttr, ukey, body = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), ARGV[a + 3], ARGV[a + 4]
  local dup = ukey ~= '' and redis.call('HGET', T.u, ukey)
  if dup then
    out[#out + 1] = idnum(dup)
    out[#out + 1] = 1
  else
    seq = seq + 1
    local idh = idhex(seq * 256 + tag)
    local state, deadline = READY, 0
    if delay > 0 then
      state, deadline = DELAYED, now + delay
      redis.call('ZADD', T.d, deadline, idh)
    else
      redis.call('ZADD', T.r, pri, idh)
    end
    save(idh, { tube, pri, state, delay, ttr, now, deadline, 0, 0, 0, 0, 0, '', ukey }, body)
    if ukey ~= '' then
      redis.call('HSET', T.u, ukey, idh)
    end
    stored = stored + 1
    out[#out + 1] = idnum(idh)
    out[#out + 1] = 0
  end
end
if stored > 0 then
  redis.call('HINCRBY', T.t, 'total', stored)
  redis.call('HINCRBY', KEYS[1], 'total', stored)
  wake(T)
end
return out
