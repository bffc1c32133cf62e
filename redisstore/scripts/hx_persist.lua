#!lua
-- hx_persist: removes the TTL of fields of one hash.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, hash name, then field names
-- Returns: per field: -2 missing or expired, -1 without TTL, 1 removed.
local now = nowms()
local D, name = KEYS[7], ARGV[3]
local out = each_live(D, name, 4, now, function(f, raw, dl)
  if dl == 0 then
    return -1
  end
  -- The wheel entry stays: the sweep skips it (the deadline moved).
  redis.call('HSET', D, f, enc6(0) .. string.sub(raw, 7))
  return 1
end)
gc(D, name)
finish()
return out
