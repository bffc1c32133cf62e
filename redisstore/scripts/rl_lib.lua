-- rl_lib.lua: helpers of the rate limit scripts (rl_*.lua). The library
-- (library.go) defines them once, when it loads, for the rl_ family's
-- operations; an operation's body runs with them in scope.
--
-- Conventions of every rate limit script:
--   KEYS        one key per limit of the call, all under the limiter key's
--               hash tag: <prefix>rl:{<key>}:<g|l|w><interval or window, base 36>.<burst or events, base 36>
--   ARGV[1]     "" to use Redis's TIME, or an injected time in microseconds (tests)
-- Times and durations are integer microseconds; every number returned is an
-- integer. State expires (PEXPIRE) when the key is idle again. With an
-- injected clock the expiry is at least 10 minutes of real time, so that a
-- test's clock, which moves at its own pace, never outlives the state.

local function rl_now()
  if ARGV[1] ~= '' then
    return tonumber(ARGV[1]), true
  end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2]), false
end

-- rl_px is the expiry in milliseconds of state idle again in us µs.
local function rl_px(us, injected)
  local ms = math.ceil(us / 1000) + 1
  if injected and ms < 600000 then
    ms = 600000
  end
  return ms
end

-- rl_int writes an integer held in a Lua number without an exponent.
local function rl_int(x)
  return string.format('%.0f', x)
end

-- Scratch arrays of rl_gcra, one entry per limit of the decision at hand,
-- kept between calls so that a decision builds no table of its own (a
-- call runs alone in Redis; entries past the decision's limits are stale
-- and never read).
local RL_K, RL_T, RL_B, RL_Q, RL_TAT = {}, {}, {}, {}, {}
