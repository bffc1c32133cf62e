#!lua
-- hx_persist: removes the TTL of fields of one hash.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, hash name, then field names
-- Returns: per field: -2 missing or expired, -1 without TTL, 1 removed.
local now = nowms()
local D, name = KEYS[7], ARGV[3]
local out = {}
for k = 4, #ARGV do
  local f = ARGV[k]
  local raw = redis.call('HGET', D, f)
  local code = -2
  if raw then
    local dl, gone = deadline(raw, now)
    if gone then
      expire(D, name, f, raw, dl, now)
    elseif dl == 0 then
      code = -1
    else
      -- The wheel entry stays: the sweep skips it (the deadline moved).
      redis.call('HSET', D, f, enc6(0) .. string.sub(raw, 7))
      code = 1
    end
  end
  out[#out + 1] = code
end
gc(D, name)
finish()
return out
