#!lua
-- hx_set: stores fields in one hash.
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, hash name, ttl ms (0: none), keep ("1": a set without
--       ttl keeps a field's deadline), then field, value pairs
-- Returns: how many fields were new (absent or expired before).
local now = nowms()
local name, ttl, keep = ARGV[3], tonumber(ARGV[4]), ARGV[5] == '1'
local D = KEYS[7]
local dl = 0
if ttl > 0 then
  dl = now + ttl
end
local added = 0
for k = 6, #ARGV, 2 do
  local f, v = ARGV[k], ARGV[k + 1]
  local old = redis.call('HGET', D, f)
  local odl = 0
  if old then
    local gone
    odl, gone = deadline(old, now)
    if gone then
      expire(D, name, f, old, odl, now)
      old, odl = nil, 0
    end
  end
  if not old then
    added = added + 1
  end
  local nd = dl
  if ttl == 0 and keep then
    nd = odl
  end
  redis.call('HSET', D, f, enc6(nd) .. v)
  if nd > 0 and nd ~= odl then
    insert(name, f, nd, now)
  end
end
finish()
return added
