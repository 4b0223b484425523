#!lua flags=no-writes
--[[
  peek-ready / peek-delayed / peek-buried in one tube: the job reserve would
  pick (pause ignored), the soonest delayed job, the oldest buried job.
  KEYS  10 globals, then 5 for the tube
  ARGV  [1] 'ready' | 'delayed' | 'buried'
  Returns {id, body} or an empty array.
]]
--- @include "jobs"
local T = tube_keys(1)
local first = redis.call('ZRANGE', T[ARGV[1]], 0, 0)
if not first[1] then return {} end
local id = member_id(first[1])
if not load_job(id) then return {} end
return { id, job_body(id) }
