#!lua flags=no-writes
-- check: verifies the invariants of one tag (tests and diagnostics only; it
-- reads every job of the tag). Every job is in exactly one index, has a
-- reservation (o) exactly when that index is the reserved set, is ready at
-- its priority, and every past, reservation, result and error history has
-- its job; every index
-- entry has a job of that tube, every tube
-- with jobs is registered, and every registered tube holds a job, a
-- reference, a pause or a kept job. A kept job is in T:k only, without
-- a reservation, counted by kn, its tube in the tag's kt no later than
-- its first drop.
-- KEYS: m j tubes, then the 6 keys of each tube the registry lists
-- ARGV: now (unused), the tube names in the order of KEYS
-- Returns: an array of problems (empty when all is well).
local problems = {}
local byname = {}
for i = 2, #ARGV do
  byname[ARGV[i]] = tubekeys(i - 1)
end
local idx = { 'r', 'd', 'x', 'b' }
local flat = redis.call('HGETALL', KEYS[2])
local fields = {}
for k = 1, #flat, 2 do
  fields[flat[k]] = flat[k + 1]
end
local count, kcount = {}, {}
for idh, v in pairs(fields) do
  local kind = string.sub(idh, 1, 1)
  if kind == 'p' or kind == 'o' or kind == 'f' or kind == 'e' then
    -- a past or a reservation belongs to a job
    if not fields[string.sub(idh, 2)] then
      problems[#problems + 1] = idh .. ': no job ' .. string.sub(idh, 2)
    end
  else
    local rec = rec_of(v, fields['p' .. idh], fields['o' .. idh])
    local name = tube_name(rec[F_TUBE])
    local T = name and byname[name]
    if not T then
      problems[#problems + 1] = idh .. ': tube number ' .. rec[F_TUBE] .. ' (' .. tostring(name) .. ') not registered'
    else
      if tonumber(redis.call('HGET', T.t, 'ix')) ~= rec[F_TUBE] then
        problems[#problems + 1] = idh .. ': tube number ' .. rec[F_TUBE] .. ' but tube ' .. name .. ' has number ' .. tostring(redis.call('HGET', T.t, 'ix'))
      end
      local found = 0
      if rec.ended then
        kcount[name] = (kcount[name] or 0) + 1
        if not redis.call('ZSCORE', T.t .. ':k', idh) then
          problems[#problems + 1] = idh .. ': ended but not kept in ' .. name .. ':k'
        end
        if fields['o' .. idh] then
          problems[#problems + 1] = idh .. ': kept with a reservation (o)'
        end
        found = 1
      else
        count[name] = (count[name] or 0) + 1
      end
      for s, f in ipairs(idx) do
        if redis.call('ZSCORE', T[f], idh) then
          found = found + 1
          if (s == RESERVED) ~= (rec[F_STATE] == RESERVED) then
            problems[#problems + 1] = idh .. ': in index ' .. f .. (rec[F_STATE] == RESERVED and ' with' or ' without') .. ' a reservation (o)'
          end
          if s == READY and tonumber(redis.call('ZSCORE', T.r, idh)) ~= rec[F_PRI] then
            problems[#problems + 1] = idh .. ': ready at priority ' .. redis.call('ZSCORE', T.r, idh) .. ' but its priority is ' .. rec[F_PRI]
          end
        end
      end
      if found ~= 1 then
        problems[#problems + 1] = idh .. ': in ' .. found .. ' indexes'
      end
    end
  end
end
for name, T in pairs(byname) do
  local n = 0
  for _, f in ipairs(idx) do
    n = n + redis.call('ZCARD', T[f])
  end
  if n ~= (count[name] or 0) then
    problems[#problems + 1] = 'tube ' .. name .. ': indexes hold ' .. n .. ' jobs, records ' .. (count[name] or 0)
  end
  local kn = redis.call('ZCARD', T.t .. ':k')
  if kn ~= (kcount[name] or 0) or kn ~= tonumber(redis.call('HGET', T.t, 'kn') or '0') then
    problems[#problems + 1] = 'tube ' .. name .. ': ' .. name .. ':k holds ' .. kn .. ' jobs, records ' .. (kcount[name] or 0) .. ', kn ' .. tostring(redis.call('HGET', T.t, 'kn'))
  end
  if kn > 0 then
    local first = redis.call('ZRANGE', T.t .. ':k', 0, 0, 'WITHSCORES')
    local at = redis.call('ZSCORE', string.sub(KEYS[1], 1, -2) .. 'kt', name)
    if not at or tonumber(at) > tonumber(first[2]) then
      problems[#problems + 1] = 'tube ' .. name .. ': kt says ' .. tostring(at) .. ', its first drop is ' .. first[2]
    end
  end
  local h = redis.call('HMGET', T.t, 'live', 'nd', 'pu', 'rf')
  if tonumber(h[1] or '0') ~= n then
    problems[#problems + 1] = 'tube ' .. name .. ': live is ' .. tostring(h[1]) .. ', indexes hold ' .. n
  end
  if n == 0 and not h[3] and not h[4] and kn == 0 then
    problems[#problems + 1] = 'tube ' .. name .. ': registered, but holds no job, no reference and no pause'
  end
  -- nd must not be later than anything that falls due.
  local first = nil
  for _, f in ipairs({ 'd', 'x' }) do
    local z = redis.call('ZRANGE', T[f], 0, 0, 'WITHSCORES')
    if #z > 0 and (first == nil or tonumber(z[2]) < first) then first = tonumber(z[2]) end
  end
  if h[3] and (first == nil or tonumber(h[3]) < first) then first = tonumber(h[3]) end
  if first and (not h[2] or tonumber(h[2]) > first) then
    problems[#problems + 1] = 'tube ' .. name .. ': nd ' .. tostring(h[2]) .. ' is later than the next due time ' .. first
  end
end
return problems
