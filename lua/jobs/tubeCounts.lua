#!lua flags=no-writes
--[[
  Job counts of the given tubes, for stats-tube and stats.
  KEYS  10 globals, then 5 per tube
  ARGV  [1..] tube names
  Returns per tube, 16 values: exists (0/1), urgent, ready, reserved,
  delayed, buried, total-jobs, cmd-delete, cmd-pause-tube, pause s,
  pause µs left, max-reserved, reserve-rate, dedup-window, jobs-expired,
  duplicate-puts; then the global total-jobs and job-timeouts.
]]
--- @include "jobs"
local out = {}
for _, T in ipairs((tubes_from(1))) do
  local exists = redis.call('ZSCORE', K_TUBES, T.name) and 1 or 0
  local m = redis.call('HMGET', T.meta, 'reserved', 'total-jobs', 'cmd-delete', 'cmd-pause-tube', 'pause', 'pause-until',
    'jobs-expired', 'duplicate-puts', 'settings')
  -- A tube that exists holds a copy of its settings; one that does not, only the settings hash.
  local settings = tube_settings(T.name, exists == 1 and (m[9] or false) or nil)
  local pause, left = tonumber(m[5] or '0'), us_until(tonumber(m[6] or '0'))
  if left <= 0 then pause = 0 end
  local values = { exists, redis.call('ZCOUNT', T.ready, 0, URGENT), redis.call('ZCARD', T.ready),
    tonumber(m[1] or '0'), redis.call('ZCARD', T.delayed), redis.call('ZCARD', T.buried),
    tonumber(m[2] or '0'), tonumber(m[3] or '0'), tonumber(m[4] or '0'), pause, left,
    settings.max, settings.rate, settings.window, tonumber(m[7] or '0'), tonumber(m[8] or '0') }
  for _, v in ipairs(values) do out[#out + 1] = v end
end
local g = redis.call('HMGET', K_STATS, 'total-jobs', 'job-timeouts')
out[#out + 1] = tonumber(g[1] or '0')
out[#out + 1] = tonumber(g[2] or '0')
return out
