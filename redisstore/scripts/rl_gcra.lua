#!lua
-- rl_gcra: GCRA decisions (allow, reserve, cancel or roll back), each on
-- every limit of its key, charged to all of them or none, one after the
-- other (concurrent callers' decisions travel together, on any keys of one
-- Redis or one slot of a cluster).
-- KEYS: per decision, per limit, a string holding its theoretical arrival
--       time (µs)
-- ARGV: now, then per decision: op ("a" allow, "r" reserve, "c" cancel,
--       "u" roll back), n, L (its number of limits), per limit: interval
--       (µs), burst, quota; then, for "r" only, the max wait (µs, -1: any),
--       for "c" and "u" only, at (µs: the reservation's slot for cancel,
--       the admission's time for roll back)
-- Returns per decision: ok (1 or 0), remaining, retry-after, reset-after,
-- delay, now
--
-- A cost of c units passes at time t when max(tat, t) + c*interval -
-- burst*interval <= t; it then sets tat = max(tat, t) + c*interval (the
-- library's one GCRA, gcra_lib.lua: gcra_delay, gcra_charge). The
-- state expires when tat is reached: the key is idle again. Each key is
-- read once and written once however many decisions of the call use it.
-- A one-limit allow or reserve that costs something, on a key the next
-- decision does not use, reads its key with the write it would make if the
-- key were idle (SET … GET): on a key used by nothing else, that is the
-- decision's only command; where the guess was wrong, the key is written
-- again at the end. (Decisions on one hot key keep one GET and one SET a
-- call.)
local now, injected = rl_now()
local tats, dirty, written = {}, {}, {}
local out, m = {}, 0
local k, j, nargs = 0, 2, #ARGV
local max, floor, tonumber = math.max, math.floor, tonumber

-- grant decides an allow or a reserve that would wait delay µs: granted
-- (1) at once, or for a reserve (op 'r') within its max wait, ARGV[j]
-- (-1: any). It returns that and the index of the decision's next argument.
local function grant(op, delay, j)
  if op ~= 'r' then
    return delay == 0 and 1 or 0, j
  end
  local maxwait = tonumber(ARGV[j])
  if delay == 0 or maxwait < 0 or delay <= maxwait then
    return 1, j + 1
  end
  return 0, j + 1
end

while j <= nargs do
  local op, n, L = ARGV[j], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
  j = j + 3
  local ok, delay, retry, remaining, reset = 0, 0, 0, -1, 0
  if L == 1 and (op == 'a' or op == 'r') then
    -- One limit, allow or reserve (nearly every decision): the general
    -- case below for L = 1, without its arrays.
    k = k + 1
    local key = KEYS[k]
    local T, B, Q = tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
    j = j + 3
    local cost = n * Q * T
    local tat = tats[key]
    if not tat then
      if cost > 0 and KEYS[k + 1] ~= key then
        local guess = now + cost
        tat = tonumber(redis.call('SET', key, rl_int(guess), 'PX', rl_px(cost, injected), 'GET') or '0')
        written[key] = guess
        dirty[key] = true
      else
        tat = tonumber(redis.call('GET', key) or '0')
      end
      tats[key] = tat
    end
    local base = max(tat, now)
    delay = gcra_delay(tat, now, cost, B * T)
    ok, j = grant(op, delay, j)
    if ok == 1 then
      tat = gcra_charge(tat, now + delay, cost)
      tats[key] = tat
      dirty[key] = true
      base = tat
    else
      retry = delay
    end
    remaining = floor(max(floor((now + B * T - base) / T), 0) / Q)
    reset = base - now
  else
    local K, T, B, Q, tat = RL_K, RL_T, RL_B, RL_Q, RL_TAT
    for i = 1, L do
      local key = KEYS[k + i]
      K[i], T[i], B[i], Q[i] = key, tonumber(ARGV[j]), tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2])
      j = j + 3
      local t = tats[key]
      if not t then
        t = tonumber(redis.call('GET', key) or '0')
        tats[key] = t
      end
      tat[i] = t
    end
    k = k + L
    if op == 'c' then
      -- Give back only what no later reservation builds on: the latest
      -- reservation acts at tat - burst*T, and the part of this one's cost
      -- that lies before that is in use.
      local at = tonumber(ARGV[j])
      j = j + 1
      if at > now then
        for i = 1, L do
          if tat[i] > now then
            local cost = n * Q[i] * T[i]
            local give = math.min(cost, cost - (tat[i] - B[i] * T[i] - at))
            if give > 0 then
              tat[i] = max(tat[i] - give, now)
              ok = 1
            end
          end
        end
      end
    elseif op == 'u' then
      -- The cost less the time since the admission: later admissions that
      -- found the state at or after ours built on at most that much of it.
      local since = max(now - tonumber(ARGV[j]), 0)
      j = j + 1
      for i = 1, L do
        local give = n * Q[i] * T[i] - since
        if give > 0 and tat[i] > now then
          tat[i] = max(tat[i] - give, now)
          ok = 1
        end
      end
    else
      delay = 0
      for i = 1, L do
        delay = max(delay, gcra_delay(tat[i], now, n * Q[i] * T[i], B[i] * T[i]))
      end
      ok, j = grant(op, delay, j)
      if ok == 1 then
        for i = 1, L do
          tat[i] = gcra_charge(tat[i], now + delay, n * Q[i] * T[i])
        end
      else
        retry = delay
      end
    end
    for i = 1, L do
      if ok == 1 then
        tats[K[i]] = tat[i]
        dirty[K[i]] = true
      end
      local base = max(tat[i], now)
      local free = floor(max(floor((now + B[i] * T[i] - base) / T[i]), 0) / Q[i])
      if remaining < 0 or free < remaining then remaining = free end
      if base - now > reset then reset = base - now end
    end
  end
  out[m + 1], out[m + 2], out[m + 3], out[m + 4], out[m + 5], out[m + 6] = ok, remaining, retry, reset, delay, now
  m = m + 6
end

for key in pairs(dirty) do
  local t = tats[key]
  if t > now then
    if written[key] ~= t then
      redis.call('SET', key, rl_int(t), 'PX', rl_px(t - now, injected))
    end
  else
    redis.call('DEL', key)
  end
end
return out
