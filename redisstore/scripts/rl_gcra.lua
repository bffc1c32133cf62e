#!lua
-- rl_gcra: one GCRA decision (allow, reserve or cancel) for every limit of
-- one key, all charged or none.
-- KEYS: per limit, a string holding its theoretical arrival time (µs)
-- ARGV: now, op ("a" allow, "r" reserve, "c" cancel), n, max wait (µs, -1:
--       any), at (µs, the reservation's slot, for cancel), then per limit:
--       interval (µs), burst, quota
-- Returns: {ok (1 or 0), remaining, retry-after, reset-after, delay, now}
local now, injected = rl_now()
local op, n, maxwait, at = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local L = #KEYS
local tat, T, B, C, Q = {}, {}, {}, {}, {}
for i = 1, L do
  local a = 5 + (i - 1) * 3
  T[i], B[i], Q[i] = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  C[i] = n * Q[i]
  tat[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
end

local function write(i, t)
  if t <= now then
    redis.call('DEL', KEYS[i])
  else
    redis.call('SET', KEYS[i], rl_int(t), 'PX', rl_px(t - now, injected))
  end
end

local ok, delay, retry = 0, 0, 0
if op == 'c' then
  if at > now then
    for i = 1, L do
      if tat[i] > now then
        tat[i] = math.max(tat[i] - C[i] * T[i], now)
        write(i, tat[i])
        ok = 1
      end
    end
  end
else
  local act = now
  for i = 1, L do
    act = math.max(act, math.max(tat[i], now) + C[i] * T[i] - B[i] * T[i])
  end
  delay = act - now
  if op == 'a' then
    if delay == 0 then ok = 1 end
  elseif maxwait < 0 or delay <= maxwait then
    ok = 1
  end
  if ok == 1 then
    for i = 1, L do
      tat[i] = math.max(tat[i], act) + C[i] * T[i]
      write(i, tat[i])
    end
  else
    retry = delay
  end
end

local remaining, reset = -1, 0
for i = 1, L do
  local base = math.max(tat[i], now)
  local free = math.floor(math.max(math.floor((now + B[i] * T[i] - base) / T[i]), 0) / Q[i])
  if remaining < 0 or free < remaining then remaining = free end
  reset = math.max(reset, base - now)
end
return { ok, remaining, retry, reset, delay, now }
