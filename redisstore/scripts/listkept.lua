#!lua flags=no-writes
-- listkept: a page of the jobs a tube partition keeps (see "Kept jobs" in
-- lib.lua), in the order of T:k from its end: the one dropped last first,
-- and of those dropped at the same time the higher id first. Only jobs
-- whose time has not come.
-- KEYS: m j tubes, then the 6 keys of the tube (see lib.lua)
-- ARGV: now, tube, cursor: drop time (ms) and id (hex) of the job the
-- page starts after ('' '' for the first page), limit, the most bytes of a
-- result to return
-- Returns: a flat array, 8 elements a job: id (hex), unique key, how it
-- ended (1 finished, 2 cancelled), ended at ms, dropped at ms, the first
-- bytes of its result, the result's length, its last error
local T = tubekeys(1)
local k = T.t .. ':k'
local now = math.floor(redis_us() / 1000)
local limit, cut = tonumber(ARGV[5]), tonumber(ARGV[6])
local page
if ARGV[3] == '' then
  page = redis.call('ZRANGE', k, '+inf', '(' .. now, 'BYSCORE', 'REV', 'LIMIT', 0, limit, 'WITHSCORES')
else
  -- After the cursor's job, by its rank while it is kept; once it is
  -- dropped, every job dropped at its time has gone by too.
  local rank = redis.call('ZREVRANK', k, ARGV[4])
  local score = rank and redis.call('ZSCORE', k, ARGV[4])
  if rank and tonumber(score) == tonumber(ARGV[3]) then
    page = redis.call('ZRANGE', k, rank + 1, rank + limit, 'REV', 'WITHSCORES')
  else
    page = redis.call('ZRANGE', k, '(' .. ARGV[3], '(' .. now, 'BYSCORE', 'REV', 'LIMIT', 0, limit, 'WITHSCORES')
  end
end
local out = {}
for i = 1, #page, 2 do
  local idh, drop = page[i], tonumber(page[i + 1])
  if drop <= now then
    break
  end
  local v = redis.call('HMGET', KEYS[2], idh, 'p' .. idh, 'f' .. idh)
  if v[1] and v[2] then
    local rec = rec_of(v[1], v[2], nil)
    if rec.ended then
      local result = v[3] or ''
      out[#out + 1] = idh
      out[#out + 1] = rec[F_UKEY]
      out[#out + 1] = rec.ended
      out[#out + 1] = rec[F_CREATED] + rec.endedat
      out[#out + 1] = drop
      out[#out + 1] = string.sub(result, 1, cut)
      out[#out + 1] = #result
      out[#out + 1] = rec[F_ERROR]
    end
  end
end
return out
