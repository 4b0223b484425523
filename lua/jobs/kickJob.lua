#!lua flags=allow-oom
--[[
  kick-job: moves one buried or delayed job (any tube) to ready.
  KEYS  10 globals, then 5 for the job's tube
  ARGV  [1] events channel  [2] id  [3] tube name
  Returns 1 kicked, 0 absent or not buried/delayed.
]]
--- @include "jobs"
local id = ARGV[2]
local j = load_job(id)
if not j or (j[F_STATE] ~= BURIED and j[F_STATE] ~= DELAYED) then return 0 end
local T = tubes_from(3)[1]
leave_state(T, id, j)
j[F_KICKS] = j[F_KICKS] + 1
enter_ready(T, id, j)
save_job(id, j)
notify_ready(ARGV[1], T.name, 1)
write_back()
return 1
