#!lua
--[[
  reserve-job: reserves a job by id when it is ready, delayed or buried, in
  any tube, whatever the watch list or pauses.
  KEYS  8 globals, then 5 for the job's tube
  ARGV  [1] owner  [2] id
  Returns {1, id, ttr s, body}, or {0} when absent or already reserved.
]]
--- @include "common"
local id = ARGV[2]
local j = load_job(id)
if not j or j[F_STATE] == RESERVED then return { 0 } end
local T = tube_keys(1)
local now = now_ms()
leave_state(T, id, j)
enter_reserved(T, id, j, now, ARGV[1])
save_job(id, j)
return { 1, id, j[F_TTR], redis.call('HGET', K_BODIES, id) }
