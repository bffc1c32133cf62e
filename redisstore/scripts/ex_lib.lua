-- Helpers of the worked example's operations (ex_*.lua): the tally of
-- internal/tally, CONTRIBUTING.md's example of a primitive. Only the
-- package's tests register this family (tally_test.go); a library built
-- for use holds none of it. Every ex_ script takes
--   KEYS[1] v  string: the tally's value, "<prefix>ex:{<name>}", on the
--              hash tag of the name (one key a call, so one slot)
--   ARGV[1]    now: "" for Redis's TIME, or an injected time in µs (tests);
--              every operation takes it first, as the runner passes it. A
--              tally keeps no time, so no operation reads it.

-- ex_value reads the tally at key, 0 when it does not exist.
local function ex_value(key)
  return tonumber(redis.call('GET', key) or '0')
end
