#!lua
-- hx_expire: sets the deadline of fields of one hash under a condition
-- (Redis 7.4's HEXPIRE family).
-- KEYS: w q n i m e d (see hx_lib.lua)
-- ARGV: now, cap, hash name, mode ("r": ms from now, "a": absolute ms), ms,
--       cond ("", NX, XX, GT, LT), then field names
-- Returns: per field: -2 missing or expired, 0 condition not met, 1 set,
--          2 expired at once because the deadline is now or past.
local now = nowms()
local D, name, cond = KEYS[7], ARGV[3], ARGV[6]
local target = tonumber(ARGV[5])
if ARGV[4] == 'r' then
  target = now + target
end
local out = each_live(D, name, 7, now, function(f, raw, odl)
  local ok = cond == '' or (cond == 'NX' and odl == 0) or (cond == 'XX' and odl > 0)
    or (cond == 'GT' and odl > 0 and target > odl) or (cond == 'LT' and (odl == 0 or target < odl))
  if not ok then
    return 0
  end
  if target <= now then
    expire(D, name, f, raw, target, now)
    return 2
  end
  if target ~= odl then
    redis.call('HSET', D, f, enc6(target) .. string.sub(raw, 7))
    insert(name, f, target, now)
  end
  return 1
end)
gc(D, name)
finish()
return out
