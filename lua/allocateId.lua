#!lua
--[[
  Consumes a job id without creating a job, as beanstalkd does for a put that
  ends in EXPECTED_CRLF or DRAINING (its id is allocated with the job).
  KEYS  8 globals
  ARGV  [1] shard count  [2] this shard
  Returns the id.
]]
--- @include "common"
return fmt_int(redis.call('INCR', K_SEQ) * tonumber(ARGV[1]) + tonumber(ARGV[2]))
