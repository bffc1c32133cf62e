#!lua
-- rl_log: one sliding log decision: n events pass when every limit's log
-- holds at most events - n*quota entries younger than its window; then
-- n*quota entries are added to each log.
-- KEYS: per limit, a sorted set of entries, score the event's time (µs),
--       member "<time>:<sequence>"
-- ARGV: now, n, then per limit: window (µs), events, quota
-- Returns: {ok (1 or 0), remaining, retry-after, reset-after, 0, now}
local now, injected = rl_now()
local n = tonumber(ARGV[2])
local L = #KEYS
local W, N, Q, cnt = {}, {}, {}, {}
for i = 1, L do
  local a = 2 + (i - 1) * 3
  W[i], N[i], Q[i] = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  -- a clock that went back (a failover): never before the newest entry
  local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  if last[2] then now = math.max(now, tonumber(last[2])) end
end

local ok, retry = 1, 0
for i = 1, L do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', rl_int(now - W[i]))
  cnt[i] = redis.call('ZCARD', KEYS[i])
  local over = cnt[i] + n * Q[i] - N[i]
  if over > 0 then
    ok = 0
    local e = redis.call('ZRANGE', KEYS[i], over - 1, over - 1, 'WITHSCORES')
    retry = math.max(retry, tonumber(e[2]) + W[i] - now)
  end
end

local remaining, reset = -1, 0
for i = 1, L do
  if ok == 1 then
    local c, args = n * Q[i], {}
    for j = 1, c do
      args[#args + 1] = rl_int(now)
      args[#args + 1] = rl_int(now) .. ':' .. (cnt[i] + j)
      if #args >= 1000 or j == c then
        redis.call('ZADD', KEYS[i], unpack(args))
        args = {}
      end
    end
    cnt[i] = cnt[i] + c
  end
  if cnt[i] > 0 then
    local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
    local left = tonumber(last[2]) + W[i] - now
    redis.call('PEXPIRE', KEYS[i], rl_px(left, injected))
    reset = math.max(reset, left)
  end
  local free = math.floor((N[i] - cnt[i]) / Q[i])
  if remaining < 0 or free < remaining then remaining = free end
end
return { ok, remaining, retry, reset, 0, now }
