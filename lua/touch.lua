#!lua
--[[
  Gives a job reserved by the caller a fresh TTR (deadline = now + ttr).
  KEYS  8 globals, then 5 for the job's tube
  ARGV  [1] owner  [2] id
  Returns the job's ttr in seconds, or 0 when not reserved by the caller.
]]
--- @include "common"
local id = ARGV[2]
local j = load_reserved_by(id, ARGV[1])
if not j then return 0 end
j[F_DUE] = now_ms() + j[F_TTR] * 1000
redis.call('ZADD', K_RESERVED, j[F_DUE], pad(id) .. j[F_TUBE])
save_job(id, j)
return j[F_TTR]
