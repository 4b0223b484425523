#!lua flags=allow-oom
--[[
  kick: moves up to `bound` jobs of one tube to ready: buried jobs (oldest
  first) when the tube has any, else delayed jobs (soonest first).
  KEYS  10 globals, then 5 for the tube
  ARGV  [1] events channel  [2] bound (at most this many in this call)
        [3] mode: '' decide, 'buried' or 'delayed' (a caller that kicks in
        several calls keeps the first call's choice)  [4] tube name
  Returns {count kicked, mode used}
]]
--- @include "jobs"
local T = tubes_from(4)[1]
local bound = tonumber(ARGV[2])
local mode = ARGV[3]
if mode == '' then
  mode = (redis.call('ZCARD', T.buried) > 0) and 'buried' or 'delayed'
end
local from = (mode == 'buried') and T.buried or T.delayed
local members = redis.call('ZRANGE', from, 0, bound - 1)
for _, m in ipairs(members) do
  local id = member_id(m)
  local j = load_job(id)
  if mode == 'buried' then unbury(T, m) else leave_delayed(T, id) end
  j[F_KICKS] = j[F_KICKS] + 1
  enter_ready(T, id, j)
  save_job(id, j)
end
notify_ready(ARGV[1], T.name, #members)
write_back()
return { #members, mode }
