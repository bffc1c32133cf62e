#!lua
-- counters_record: stores the tubes' counter samples of one minute.
-- KEYS: the minute's hash (cn:<minute>)
-- ARGV: now, keep (ms), then per sample: tube, counters ("puts reserves deletes buries timeouts")
-- Returns: 1.
-- The hash holds a field per tube and '*end': the end of its keep on the
-- store's clock (ms), set by the minute's first record; the key expires
-- then too (PEXPIRE, Redis's clock), so the history's footprint is bounded.
local K = KEYS[1]
local now = math.floor(redis_us() / 1000)
local keep = tonumber(ARGV[2])
if redis.call('HSETNX', K, '*end', now + keep) == 1 then
  redis.call('PEXPIRE', K, keep)
end
for i = 3, #ARGV, 2 do
  redis.call('HSET', K, ARGV[i], ARGV[i + 1])
end
return 1
