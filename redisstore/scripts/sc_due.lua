#!lua
-- sc_due: the due schedules of one tag.
-- KEYS: sc, scd (see sc_set.lua)
-- ARGV: now ('' for Redis's TIME, or µs), the most to return, where to start
--       among the due schedules when more are due than returned (0 to
--       999999: a fraction of the rest, in millionths), so processes firing
--       at once take different ones
-- Returns: {now µs, earliest next µs of the schedules not due (-1: none), then
--          per due schedule: name, definition, body, version, next, paused,
--          fires, misfires, #last, last...}
local SC, SCD = KEYS[1], KEYS[2]
local us
if ARGV[1] ~= '' then
  us = tonumber(ARGV[1])
else
  local t = redis.call('TIME')
  us = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- The due schedules are the first n members of SCD: a window of them is
-- read by rank, O(log N + limit), wherever it starts.
local limit, names = tonumber(ARGV[2]), {}
local n = redis.call('ZCOUNT', SCD, '-inf', us)
if n > limit and ARGV[3] ~= '0' then
  local offset = math.floor((n - limit) * tonumber(ARGV[3]) / 1000000)
  names = redis.call('ZRANGE', SCD, offset, offset + limit - 1)
elseif n > 0 then
  names = redis.call('ZRANGE', SCD, 0, math.min(n, limit) - 1)
end
local earliest = -1
local first = redis.call('ZRANGE', SCD, '(' .. us, '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
if first[2] then
  earliest = tonumber(first[2])
end
return sc_append_named({ us, earliest }, SC, names)
