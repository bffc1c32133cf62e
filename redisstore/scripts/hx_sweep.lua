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
local behind = false -- urgent work left
local urgent, refined = 0, 0 -- entries of urgent buckets, of the others

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

while true do
  local due = redis.call('ZRANGEBYSCORE', Q, '-inf', now, 'LIMIT', 0, 64)
  if #due == 0 then
    break
  end
  -- The finest due bucket first: level 0 holds fields due now, and a
  -- finer bucket's entries fall due before a coarser one's, which was made
  -- due a whole bucket width early so that refining it can wait. Urgent
  -- buckets (level 0, and coarse ones in the last quarter of that width)
  -- take up to max entries a call; the others, up to a quarter of max
  -- more, so that refining keeps going while expiries are behind, and
  -- when only they are left the call asks to be called again with the
  -- shard's next bucket due, or in 4 ms at the latest: thousands of
  -- entries refined at once never hold Redis, and the fields falling due
  -- meanwhile, for long.
  local ub, ul, nb, nl = nil, 99, nil, 99
  for _, d in ipairs(due) do
    local dl, di = string.match(d, '^(%d+):(%d+)$')
    dl = tonumber(dl)
    if dl == 0 or tonumber(di) * width(dl) - now <= width(dl) / 4 then
      if dl < ul then
        ub, ul = d, dl
      end
    elseif dl < nl then
      nb, nl = d, dl
    end
  end
  local b, burgent
  if ub and urgent < max then
    b, burgent = ub, true
  elseif nb and refined < max / 4 then
    b, burgent = nb, false
  else
    if ub then
      behind = true
    else
      paced = true
    end
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
    if burgent then
      urgent = urgent + 1
    else
      refined = refined + 1
    end
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
if behind then
  return { emitted, 1, 0, work }
end
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
