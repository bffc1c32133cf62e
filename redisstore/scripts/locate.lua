#!lua flags=no-writes
-- locate: the tubes of jobs, for commands that name only a job id.
-- KEYS: m j
-- ARGV: now (unused), job ids (hex)...
-- Returns: one tube name per id, or false when there is no such job.
local out = {}
for a = 2, #ARGV do
  local rec = load(ARGV[a])
  if rec then
    out[#out + 1] = tube_name(rec[F_TUBE])
  else
    out[#out + 1] = false
  end
end
return out
