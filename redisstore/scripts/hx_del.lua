#!lua
-- hx_del: deletes fields of one hash; an expired one expires (with its event).
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, hash name, then field names
-- Returns: how many fields were live.
local now = nowms()
local D, name = KEYS[7], ARGV[3]
local n = 0
for k = 4, #ARGV do
  local f = ARGV[k]
  local raw = redis.call('HGET', D, f)
  if raw then
    local dl, gone = deadline(raw, now)
    if gone then
      expire(D, name, f, raw, dl, now)
    else
      redis.call('HDEL', D, f)
      n = n + 1
    end
  end
end
gc(D, name)
finish()
return n
