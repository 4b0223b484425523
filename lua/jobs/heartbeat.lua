#!lua flags=allow-oom
--[[
  A sidecar says it is alive and stores a snapshot of its connection-level
  counters (connections, per-command counts, per-tube using/watching/waiting)
  so that `stats` on any sidecar sums every live sidecar.
  KEYS  9 globals, then [10] this sidecar's stats hash
  ARGV  [1] sidecar id  [2] ttl ms  [3..] field, value pairs
  Returns 1 when the sidecar was not in the live set (first beat, or its
  lease lapsed and it may have been reaped: it must re-register its tube
  references), else 0.
]]
--- @include "jobs"
local added = redis.call('ZADD', K_NODES, now_ms() + tonumber(ARGV[2]), ARGV[1])
redis.call('DEL', KEYS[10])
if #ARGV > 2 then redis.call('HSET', KEYS[10], unpack(ARGV, 3)) end
return added
