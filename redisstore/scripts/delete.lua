#!lua
-- delete: deletes jobs of one tube, for R requests in turn (each an
-- owner's, merged from callers that waited together).
-- KEYS: m j tubes, then the 6 keys of the tube (see lib.lua)
-- ARGV: now, tube, request count R, then per request: owner, id count C, C job ids (hex)
-- Returns: one list per request, one outcome per id: 1 deleted, 0 no such
-- job, -1 reserved by another owner, -2 in another tube
local T = tubekeys(1)
local tube = ARGV[2]
local us, now = open({ T })
-- No tick: a delete removes a job in whatever state it is. Only a
-- reserved job whose TTR has run out needs the due transitions applied
-- first (its timeout counts, and a ready job is anyone's to delete):
-- delete_one says so (-3), and the tube is ticked once.
local ticked = false
local had = T.live
local out = {}
local a = 4
for r = 1, tonumber(ARGV[3]) do
  local owner, c = ARGV[a], tonumber(ARGV[a + 1])
  local res = {}
  for p = a + 2, a + 1 + c do
    local o = delete_one(T, tube, ARGV[p], owner, now)
    if o == -3 then
      if not ticked then
        ticked = true
        tick(T, tube, now)
      end
      o = delete_one(T, tube, ARGV[p], owner)
    end
    res[#res + 1] = o
  end
  out[r] = res
  a = a + 2 + c
end
settle(T, tube, now, had)
return done(T, out)
