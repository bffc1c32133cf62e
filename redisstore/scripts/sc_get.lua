#!lua
-- sc_get: reads schedules of one tag.
-- KEYS: sc, scn (see sc_set.lua)
-- ARGV: now (unused), mode ('name' or 'list'), then for 'name': the name; for
--       'list': the name to list after ('' for the first), the most to return
-- Returns: a flat array of schedules, each {name, definition, body, version,
--          next, paused, fires, misfires, #last, last...}; empty when none.
local SC, SCN = KEYS[1], KEYS[2]
local names
if ARGV[2] == 'name' then
  names = { ARGV[3] }
else
  local from = '-'
  if ARGV[3] ~= '' then
    from = '(' .. ARGV[3]
  end
  names = redis.call('ZRANGE', SCN, from, '+', 'BYLEX', 'LIMIT', 0, tonumber(ARGV[4]))
end
return sc_append_named({}, SC, names)
