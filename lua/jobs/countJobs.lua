#!lua flags=allow-oom
--[[
  Counts, once, the ready, urgent and buried jobs of all tubes into the stats
  hash, and lists the tubes with ready jobs in ready-tubes, for a data set
  written before these were kept as jobs move
  (run at start; later starts find jobs-counted set and do nothing).
  KEYS  10 globals, then 5 per tube (every tube)
  ARGV  [1..] the tube names
  Returns 1 when it counted, 0 when the counts were kept already.
]]
--- @include "jobs"
if redis.call('HEXISTS', K_STATS, 'jobs-counted') == 1 then return 0 end
local ready, urgent, buried = 0, 0, 0
for _, T in ipairs((tubes_from(1))) do
  local n = redis.call('ZCARD', T.ready)
  if n > 0 then redis.call('SADD', K_READY, T.name) end
  ready = ready + n
  urgent = urgent + redis.call('ZCOUNT', T.ready, 0, URGENT)
  buried = buried + redis.call('ZCARD', T.buried)
end
redis.call('HSET', K_STATS, 'jobs-ready', ready, 'jobs-urgent', urgent, 'jobs-buried', buried, 'jobs-counted', 1)
return 1
