#!lua
--[[
  Buries a job reserved by the caller, with a new priority.
  KEYS  8 globals, then 5 for the job's tube
  ARGV  [1] owner  [2] id  [3] new pri
  Returns 1 buried, 0 not reserved by the caller.
]]
--- @include "common"
local id = ARGV[2]
local j = load_reserved_by(id, ARGV[1])
if not j then return 0 end
local T = tube_keys(1)
leave_reserved(T, id, j)
j[F_PRI] = tonumber(ARGV[3])
j[F_BURIES] = j[F_BURIES] + 1
enter_buried(T, id, j)
save_job(id, j)
return 1
