#!lua
-- rl_gcra: one GCRA decision (allow, reserve or cancel) for every limit of
-- one key, all charged or none.
-- KEYS: per limit, a string holding its theoretical arrival time (µs)
-- ARGV: now, op ("a" allow, "r" reserve, "c" cancel, "u" roll back), n, max
--       wait (µs, -1: any), at (µs: the reservation's slot for cancel, the
--       admission's time for roll back), then per limit:
--       interval (µs), burst, quota
-- Returns: {ok (1 or 0), remaining, retry-after, reset-after, delay, now}
--
-- A cost of c units passes at time t when max(tat, t) + c*interval -
-- burst*interval <= t; it then sets tat = max(tat, t) + c*interval. The
-- state expires when tat is reached: the key is idle again. This script
-- runs on every decision, so it keeps to one table and no closures of its
-- own.
local now, injected = rl_now()
local op, n = ARGV[2], tonumber(ARGV[3])
local L = #KEYS
local tat = {}
local ok, delay, retry = 0, 0, 0

if op == 'c' then
  -- Give back only what no later reservation builds on: the latest
  -- reservation acts at tat - burst*T, and the part of this one's cost
  -- that lies before that is in use.
  local at = tonumber(ARGV[5])
  for i = 1, L do
    local t = tonumber(redis.call('GET', KEYS[i]) or '0')
    if at > now and t > now then
      local a = 3 + 3 * i
      local T, b = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
      local cost = n * tonumber(ARGV[a + 2]) * T
      local give = math.min(cost, cost - (t - b * T - at))
      if give > 0 then
        t = math.max(t - give, now)
        if t > now then
          redis.call('SET', KEYS[i], rl_int(t), 'PX', rl_px(t - now, injected))
        else
          redis.call('DEL', KEYS[i])
        end
        ok = 1
      end
    end
    tat[i] = t
  end
elseif op == 'u' then
  -- The cost less the time since the admission: later admissions that
  -- found the state at or after ours built on at most that much of it.
  local since = math.max(now - tonumber(ARGV[5]), 0)
  for i = 1, L do
    local t = tonumber(redis.call('GET', KEYS[i]) or '0')
    local a = 3 + 3 * i
    local give = n * tonumber(ARGV[a + 2]) * tonumber(ARGV[a]) - since
    if give > 0 and t > now then
      t = math.max(t - give, now)
      if t > now then
        redis.call('SET', KEYS[i], rl_int(t), 'PX', rl_px(t - now, injected))
      else
        redis.call('DEL', KEYS[i])
      end
      ok = 1
    end
    tat[i] = t
  end
else
  local act = now
  for i = 1, L do
    local a = 3 + 3 * i
    local T = tonumber(ARGV[a])
    local t = tonumber(redis.call('GET', KEYS[i]) or '0')
    tat[i] = t
    act = math.max(act, math.max(t, now) + (n * tonumber(ARGV[a + 2]) - tonumber(ARGV[a + 1])) * T)
  end
  delay = act - now
  if delay == 0 then
    ok = 1
  elseif op == 'r' then
    local maxwait = tonumber(ARGV[4])
    if maxwait < 0 or delay <= maxwait then ok = 1 end
  end
  if ok == 1 then
    for i = 1, L do
      local a = 3 + 3 * i
      local t = math.max(tat[i], act) + n * tonumber(ARGV[a + 2]) * tonumber(ARGV[a])
      tat[i] = t
      redis.call('SET', KEYS[i], rl_int(t), 'PX', rl_px(t - now, injected))
    end
  else
    retry = delay
  end
end

local remaining, reset = -1, 0
for i = 1, L do
  local a = 3 + 3 * i
  local T = tonumber(ARGV[a])
  local base = math.max(tat[i], now)
  local free = math.floor(math.max(math.floor((now + tonumber(ARGV[a + 1]) * T - base) / T), 0) / tonumber(ARGV[a + 2]))
  if remaining < 0 or free < remaining then remaining = free end
  if base - now > reset then reset = base - now end
end
return { ok, remaining, retry, reset, delay, now }
