-- gcra_lib.lua: the one Generic Cell Rate Algorithm of the library, used by a
-- tube's rate (lib.lua, reserve.lua) and by the rate limits (rl_gcra.lua).
-- The library (library.go) defines these functions once, when it loads,
-- ahead of every family's helper file, so every operation can call them.
--
-- A limit's state is its theoretical arrival time tat (µs; 0 when idle);
-- a cost is the time its units take at the limit's rate (µs: units ×
-- interval), and span the time a whole burst takes (burst × interval). A
-- cost passes at the earliest time act ≥ now with
-- max(tat, act) + cost - span <= act, and then sets tat to
-- max(tat, act) + cost. Every number is an integer of µs.

-- gcra_delay is how long (µs) from now until cost passes: 0 when it passes
-- now.
local function gcra_delay(tat, now, cost, span)
  local d = math.max(tat, now) + cost - span - now
  if d > 0 then
    return d
  end
  return 0
end

-- gcra_charge is the state after cost passes at act (now or later).
local function gcra_charge(tat, act, cost)
  return math.max(tat, act) + cost
end
