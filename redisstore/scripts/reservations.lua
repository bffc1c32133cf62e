#!lua
-- reservations: the jobs of one tag that owner has reserved, from its
-- reservation index (whose stale entries it drops on the way).
-- KEYS: m j tubes, the owner's reservation index of this tag
-- ARGV: now, owner
-- Returns: a flat array, 2 per job: id, ms left on the reservation.
local owner = ARGV[2]
local now = math.floor(redis_us() / 1000)
local ix = KEYS[4]
redis.call('ZREMRANGEBYSCORE', ix, '-inf', now)
-- The owner's entries: in a session's index, among its other owners'.
local pattern = string.gsub(owner, '[%*%?%[%]\\]', '\\%0') .. ':' .. string.rep('?', 14)
local out = {}
local cursor = '0'
repeat
  local r = redis.call('ZSCAN', ix, cursor, 'MATCH', pattern, 'COUNT', 1000)
  cursor = r[1]
  local h = r[2]
  for i = 1, #h, 2 do
    local idh = string.sub(h[i], -14)
    local rec = load(idh)
    if rec and rec[F_STATE] == RESERVED and rec[F_OWNER] == owner then
      out[#out + 1] = idnum(idh)
      out[#out + 1] = tonumber(h[i + 1]) - now
    end
  end
until cursor == '0'
return out
