#!lua flags=no-writes
--[[
  The age of each tube's oldest ready job (since it was put), for the admin
  API, the dashboard and /metrics; read when they ask, never per job.
  Ids grow as jobs are put, so the oldest is the lowest id; a ready set sorts
  by priority, then id, so that is the least of the first members of its
  priorities. At most MAX_PRIORITIES priorities are looked at a tube (beyond
  them, the age is the oldest of those).
  KEYS  10 globals, then 5 per tube
  ARGV  [1..] tube names
  Returns per tube its oldest ready job's age in ms, or -1 when none is ready.
]]
--- @include "jobs"
local MAX_PRIORITIES = 64

-- The lower of two zset members (the digit count first, so by length, then digits).
local function lower_member(a, b)
  if not a then return b end
  if #b ~= #a then return #b < #a and b or a end
  return b < a and b or a
end

--- @call
local now = now_ms()
local out = {}
for i, T in ipairs((tubes_from(1))) do
  local oldest = nil
  local first = redis.call('ZRANGE', T.ready, 0, 0, 'WITHSCORES')
  local looked = 0
  while first[1] and looked < MAX_PRIORITIES do
    looked = looked + 1
    oldest = lower_member(oldest, first[1])
    first = redis.call('ZRANGEBYSCORE', T.ready, '(' .. first[2], '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  end
  local age = -1
  local j = oldest and load_job(member_id(oldest))
  if j then age = math.max(0, math.floor(now - j[F_CREATED])) end
  out[i] = age
end
return out
