#!lua flags=no-writes
-- counters_read: the tubes' counter samples of some minutes.
-- KEYS: the minutes' hashes (cn:<minute>), in order
-- ARGV: now
-- Returns: per key, the flat array of its fields (tube, counters, ...)
--   while it is kept, or an empty array.
local now = math.floor(redis_us() / 1000)
local out = {}
for i, K in ipairs(KEYS) do
  local end_ = tonumber(redis.call('HGET', K, '*end'))
  if end_ and end_ > now then
    out[i] = redis.call('HGETALL', K)
  else
    out[i] = {}
  end
end
return out
