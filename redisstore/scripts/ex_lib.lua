-- Helpers of the worked example's operations (ex_*.lua): the tally of
-- internal/tally, CONTRIBUTING.md's example of a primitive. Only the
-- package's tests register this family (tally_test.go); a library built
-- for use holds none of it. Every ex_ script takes KEYS: v (string: the
-- tally's value).

-- ex_value reads the tally at key, 0 when it does not exist.
local function ex_value(key)
  return tonumber(redis.call('GET', key) or '0')
end
