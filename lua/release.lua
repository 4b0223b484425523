#!lua
--[[
  Releases a job reserved by the caller back to ready (delay 0) or delayed.
  KEYS  8 globals, then 5 for the job's tube
  ARGV  [1] events channel  [2] owner  [3] id  [4] new pri  [5] delay s
  Returns 1 released, 0 not reserved by the caller.
]]
--- @include "common"
local id = ARGV[3]
local j = load_reserved_by(id, ARGV[2])
if not j then return 0 end
local T = tube_keys(1)
local delay = tonumber(ARGV[5])
leave_reserved(T, id, j)
j[F_PRI] = tonumber(ARGV[4])
j[F_DELAY] = delay
j[F_RELEASES] = j[F_RELEASES] + 1
if delay > 0 then
  enter_delayed(T, id, j, now_ms(), delay)
else
  enter_ready(T, id, j)
  notify_ready(ARGV[1], j[F_TUBE], 1)
end
save_job(id, j)
return 1
