#!lua
-- rl_window: one approximate sliding window decision: n events pass when,
-- for every limit, the count of the last fixed window weighted by how much
-- of it the sliding window still covers, plus this window's count, plus
-- n*quota, is at most events.
-- KEYS: per limit, a hash: i (index of the current fixed window, now/window),
--       c (events counted in it), p (events counted in the one before)
-- ARGV: now, n, then per limit: window (µs), events, quota
-- Returns: {ok (1 or 0), remaining, retry-after, reset-after, 0, now}
local now, injected = rl_now()
local n = tonumber(ARGV[2])
local L = #KEYS
local S = {}
local ok, retry = 1, 0
for i = 1, L do
  local a = 2 + (i - 1) * 3
  local w, N, q = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local h = redis.call('HMGET', KEYS[i], 'i', 'c', 'p')
  local win, cur, prev = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0
  local t = math.max(now, win * w) -- a clock that went back
  local idx = math.floor(t / w)
  if win == idx - 1 then
    prev, cur = cur, 0
  elseif win ~= idx then
    prev, cur = 0, 0
  end
  win = idx
  local elapsed = t - idx * w
  local c = n * q
  local est = prev * (w - elapsed) / w + cur
  if est + c > N then
    ok = 0
    local r
    if cur + c <= N then
      r = math.ceil(w - (N - c - cur) * w / prev) - elapsed
    else
      r = w - elapsed + math.ceil(w - (N - c) * w / cur)
    end
    retry = math.max(retry, math.max(r, 1))
  end
  S[i] = { w = w, N = N, q = q, c = c, win = win, cur = cur, prev = prev, est = est }
end

local remaining, reset = -1, 0
for i = 1, L do
  local x = S[i]
  if ok == 1 then
    x.cur = x.cur + x.c
    x.est = x.est + x.c
  end
  local free = math.max(math.floor((x.N - x.est) / x.q), 0)
  if remaining < 0 or free < remaining then remaining = free end
  local endt = (x.win + 1) * x.w
  local expires = nil
  if x.cur > 0 then
    expires = endt + x.w
  elseif x.prev > 0 then
    expires = endt
  end
  if expires then
    redis.call('HSET', KEYS[i], 'i', rl_int(x.win), 'c', rl_int(x.cur), 'p', rl_int(x.prev))
    redis.call('PEXPIRE', KEYS[i], rl_px(expires - now, injected))
    reset = math.max(reset, expires - now)
  else
    redis.call('DEL', KEYS[i])
  end
end
return { ok, remaining, retry, reset, 0, now }
