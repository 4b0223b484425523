#!lua flags=no-writes
--[[
  peek <id> / stats-job: one job by id, in any state.
  KEYS  10 globals
  ARGV  [1] id  [2] '1' to include the body
  Returns the job fields (includes/jobs.lua job_reply) plus the body when
  asked, or an empty array when absent.
]]
--- @include "jobs"
local j = load_job(ARGV[1])
if not j then return {} end
local r = job_reply(ARGV[1], j, now_ms())
if ARGV[2] == '1' then r[#r + 1] = job_body(ARGV[1]) end
return r
