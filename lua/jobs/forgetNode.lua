#!lua flags=allow-oom
--[[
  Removes a sidecar from the live set (clean shutdown, or reaping one whose
  heartbeat expired, after its tube references were dropped with refTube).
  KEYS  9 globals, then [10] that sidecar's stats hash
  ARGV  [1] sidecar id
]]
--- @include "jobs"
redis.call('ZREM', K_NODES, ARGV[1])
redis.call('DEL', KEYS[10])
return 1
