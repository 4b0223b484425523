#!lua flags=allow-oom
--[[
  pause-tube: no reserves from the tube for `delay` seconds. 0 unpauses now
  (beanstalkd pauses for 1 ns, which ends at once) and wakes blocked reserves.
  KEYS  10 globals, then 5 for the tube
  ARGV  [1] events channel  [2] delay s  [3] tube name
  Returns 1 paused, 0 no such tube.
]]
--- @include "jobs"
local T = tubes_from(3)[1]
local delay = tonumber(ARGV[2])
if not redis.call('ZSCORE', K_TUBES, T.name) then return 0 end
redis.call('HSET', T.meta, 'pause', delay, 'pause-until', now_ms() + delay * 1000)
redis.call('HINCRBY', T.meta, 'cmd-pause-tube', 1)
if delay == 0 then notify_ready(ARGV[1], T.name, redis.call('ZCARD', T.ready)) end
return 1
