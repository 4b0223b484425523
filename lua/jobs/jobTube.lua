#!lua flags=no-writes
--[[
  The tube of a job (a job never changes tube, so callers may cache it).
  KEYS  10 globals
  ARGV  [1] id
  Returns the tube name, or false when there is no such job.
]]
--- @include "jobs"
local j = load_job(ARGV[1])
if not j then return false end
return tube_name(j)
