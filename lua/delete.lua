#!lua
--[[
  Deletes a job that is ready, delayed or buried (any connection may), or
  reserved by the caller. Removes its tube when that leaves it empty and
  unreferenced.
  KEYS  8 globals, then 5 for the job's tube
  ARGV  [1] owner  [2] id  [3] tube name
  Returns 1 deleted, 0 not found (or reserved by another connection).
]]
--- @include "common"
local id = ARGV[2]
local j = load_job(id)
if not j or (j[F_STATE] == RESERVED and j[F_OWNER] ~= ARGV[1]) then return 0 end
local T = tube_keys(1)
leave_state(T, id, j)
redis.call('HDEL', K_JOBS, id)
redis.call('HDEL', K_BODIES, id)
redis.call('HINCRBY', T.meta, 'cmd-delete', 1)
collect_tube(T, ARGV[3], now_ms())
return 1
