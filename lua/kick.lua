#!lua
--[[
  kick: moves up to `bound` jobs of one tube to ready: buried jobs (oldest
  first) when the tube has any, else delayed jobs (soonest first).
  KEYS  8 globals, then 5 for the tube
  ARGV  [1] events channel  [2] tube name  [3] bound (at most this many in
        this call)  [4] mode: '' decide, 'buried' or 'delayed' (a caller
        that kicks in several calls keeps the first call's choice)
  Returns {count kicked, mode used}
]]
--- @include "common"
local T = tube_keys(1)
local bound = tonumber(ARGV[3])
local mode = ARGV[4]
if mode == '' then
  mode = (redis.call('ZCARD', T.buried) > 0) and 'buried' or 'delayed'
end
local from = (mode == 'buried') and T.buried or T.delayed
local members = redis.call('ZRANGE', from, 0, bound - 1)
for _, p in ipairs(members) do
  local id = unpad(p)
  local j = load_job(id)
  if mode == 'buried' then redis.call('ZREM', T.buried, p) else leave_delayed(T, id, j) end
  j[F_KICKS] = j[F_KICKS] + 1
  enter_ready(T, id, j)
  save_job(id, j)
end
notify_ready(ARGV[1], ARGV[2], #members)
return { #members, mode }
