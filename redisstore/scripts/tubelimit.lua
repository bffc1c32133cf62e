#!lua
-- limit: sets, clears or reads the limits of a tube (docs/tube-limits.md).
-- The limits live in the tag's m (l:<tube>), so they outlive the tube, and
-- while the tube exists its hash holds a copy (lim), which every script
-- reads with the tube's other fields.
-- KEYS: m j tubes, then the 6 keys of the tube
-- ARGV: now, tube, op ("s" set, "g" get), spec ("events:per µs:burst:cap";
--       set: "" clears)
-- Returns: the limits after the call ("" for none)
local T = tubekeys(1)
local tube, op, spec = ARGV[2], ARGV[3], ARGV[4]
local lk = 'l:' .. tube
if op == 'g' then
  return redis.call('HGET', KEYS[1], lk) or ''
end
local exists = redis.call('ZSCORE', KEYS[3], tube)
if spec == '' then
  redis.call('HDEL', KEYS[1], lk, 'lt:' .. tube)
  if exists then
    redis.call('HDEL', T.t, 'lim', 'tat')
  end
else
  if string.match(spec, '^0:') then
    -- no rate: no state to keep
    redis.call('HDEL', KEYS[1], 'lt:' .. tube)
    if exists then
      redis.call('HDEL', T.t, 'tat')
    end
  end
  redis.call('HSET', KEYS[1], lk, spec)
  if exists then
    redis.call('HSET', T.t, 'lim', spec)
  end
end
wake(T)
return spec
