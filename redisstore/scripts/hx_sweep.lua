#!lua
-- hx_sweep: expires the due fields of one shard, about max of them at most:
-- takes the due buckets of the wheel a chunk at a time, the finest first:
-- level-0 buckets (fields due now), then coarser ones (to refine); an entry whose
-- field is due expires (event appended), one due later moves to a finer
-- bucket (written at the end of the call), one whose field is gone or has
-- another deadline is dropped.
-- KEYS: w q n i m e (see hx_lib.lua)
-- ARGV: now, cap, max
-- Returns: {expired, 1 if due work remains else 0, ms to the next bucket or
-- -1, entries looked at}; refining paced (see below) returns 0 and at
-- most 4 ms.
local now = nowms()
local max = tonumber(ARGV[3])
local work = 0
local emptied = {} -- name -> data key of the hashes fields expired from
local paced = false -- refining stopped early, to go on with a later call

-- take one chunk of bucket b, removing b from q when it was the last
local function take(b)
  local c = tonumber(redis.call('HGET', W, 'c' .. b) or '0')
  local field
  if c > 0 then
    field = 's' .. b .. '.' .. c
    if c == 1 then
      redis.call('HDEL', W, 'c' .. b)
    else
      redis.call('HSET', W, 'c' .. b, c - 1)
    end
  else
    field = 'o' .. b
  end
  local chunk = redis.call('HGET', W, field) or ''
  redis.call('HDEL', W, field)
  if c <= 1 and redis.call('HEXISTS', W, 'o' .. b) == 0 then
    redis.call('ZREM', Q, b)
  end
  return chunk
end

while work < max do
  -- Expiries first, refinements with what the budget leaves: a coarse
  -- bucket is due ahead of its entries' deadlines, and refining thousands
  -- of entries must not hold back fields due now.
  local due = redis.call('ZRANGEBYSCORE', Q, '-inf', now, 'LIMIT', 0, 64)
  if #due == 0 then
    break
  end
  -- The finest due bucket first: level 0 holds fields due now, and a
  -- finer bucket's entries fall due before a coarser one's, which was made
  -- due a whole bucket width early so that refining it can wait. Refining
  -- is paced: until the last quarter of that width a coarse bucket is not
  -- urgent, and a call refines only about a quarter of max entries of
  -- such buckets and asks to be called again with the shard's next bucket
  -- due, or in 4 ms at the latest, so that
  -- thousands of entries refined at once never hold Redis, and the fields
  -- falling due meanwhile, for long. Urgent buckets (level 0 and coarse
  -- ones near their start) come before those that are not.
  local b, bl, burgent = nil, 99, false
  for _, d in ipairs(due) do
    local dl, di = string.match(d, '^(%d+):(%d+)$')
    dl = tonumber(dl)
    local urgent = dl == 0 or tonumber(di) * width(dl) - now <= width(dl) / 4
    if (urgent and not burgent) or (urgent == burgent and dl < bl) then
      b, bl, burgent = d, dl, urgent
    end
  end
  if not burgent and work >= max / 4 then
    paced = true
    break
  end
  local l, idx = string.match(b, '^(%d+):(%d+)$')
  local lo = tonumber(idx) * width(tonumber(l))
  local hi = lo + width(tonumber(l))
  local chunk = take(b)
  local p, names = 1, {}
  while p <= #chunk do
    local id, n
    id, p = readuv(chunk, p)
    n, p = readuv(chunk, p)
    local f = string.sub(chunk, p, p + n - 1)
    p = p + n
    work = work + 1
    local name = names[id]
    if name == nil then
      name = redis.call('HGET', N, id) or false
      names[id] = name
    end
    if name then
      local D = BASE .. 'd:' .. name
      local raw = redis.call('HGET', D, f)
      if raw then
        local dl = dec6(raw)
        if dl >= lo and dl < hi then
          if dl <= now then
            expire(D, name, f, raw, dl, now)
            emptied[name] = D
          else
            insert(id, f, dl, now, tonumber(l) - 1)
          end
        end
      end
    end
  end
end

-- Hashes that may have become empty lose their id once per call, not
-- once per field expired.
for name, D in pairs(emptied) do
  gc(D, name)
end
finish()
local top = redis.call('ZRANGE', Q, 0, 0, 'WITHSCORES')
if #top == 0 then
  return { emitted, 0, -1, work }
end
local due = tonumber(top[2])
if paced then
  -- The rest of the refining goes with the next call the shard needs
  -- anyway (its next bucket due), or in 4 ms at the latest.
  local nxt = redis.call('ZRANGEBYSCORE', Q, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local wait = 4
  if #nxt > 0 then
    wait = math.max(1, math.min(wait, tonumber(nxt[2]) - now))
  end
  return { emitted, 0, wait, work }
end
if due <= now then
  return { emitted, 1, 0, work }
end
return { emitted, 0, due - now, work }
