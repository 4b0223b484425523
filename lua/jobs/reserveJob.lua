#!lua flags=allow-oom
--[[
  reserve-job: reserves a job by id when it is ready, delayed or buried, in
  any tube, whatever the watch list, pauses or limits; it counts as a reserve
  for the limits all the same (includes/limits.lua take_slot: its job holds a
  slot of max-reserved, whose freeing wakes a waiter, and it spends a token of
  reserve-rate).
  KEYS  10 globals, then 5 for the job's tube
  ARGV  [1] owner  [2] id  [3] tube name
  Returns {1, id, ttr s, body}, or {0} when absent or already reserved; an
  error when the owner's sidecar has no lease (includes/jobs.lua lease_allows).
]]
--- @include "jobs"
--- @include "limits"
local now = now_ms()
if not lease_allows(ARGV[1], now) then return redis.error_reply('ERR reserveJob: this sidecar\'s lease has lapsed') end
local id = ARGV[2]
local j = load_job(id)
if not j or j[F_STATE] == RESERVED then return { 0 } end
local T = tubes_from(3)[1]
leave_state(T, id, j)
enter_reserved(T, id, j, now, ARGV[1])
take_slot(T, id, j, now)
save_job(id, j)
write_back()
return { 1, id, j[F_TTR], job_body(id) }
