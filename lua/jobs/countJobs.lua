#!lua flags=allow-oom
--[[
  Counts, once, the ready, urgent and buried jobs of all tubes into the stats
  hash, for a data set written before those counts were kept as jobs move
  (run at start; later starts find jobs-counted set and do nothing).
  KEYS  8 globals, then 5 per tube (every tube)
  ARGV  [1..] the tube names
  Returns 1 when it counted, 0 when the counts were kept already.
]]
--- @include "jobs"
if redis.call('HEXISTS', K_STATS, 'jobs-counted') == 1 then return 0 end
local ready, urgent, buried = 0, 0, 0
for _, T in ipairs((tubes_from(1))) do
  ready = ready + redis.call('ZCARD', T.ready)
  urgent = urgent + redis.call('ZCOUNT', T.ready, 0, URGENT)
  buried = buried + redis.call('ZCARD', T.buried)
end
redis.call('HSET', K_STATS, 'jobs-ready', ready, 'jobs-urgent', urgent, 'jobs-buried', buried, 'jobs-counted', 1)
return 1
