#!lua
-- hx_del: deletes fields of one hash; an expired one expires (with its event).
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, hash name, then field names
-- Returns: how many fields were live.
local now = nowms()
local D, name = KEYS[7], ARGV[3]
local n = 0
each_live(D, name, 4, now, function(f)
  redis.call('HDEL', D, f)
  n = n + 1
  return 1
end)
gc(D, name)
finish()
return n
