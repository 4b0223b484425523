#!lua flags=allow-oom
--[[
  Upgrades a data set written before tube-order existed, once, at start: the
  set of tube names (`tubes`) becomes `tube-order`, in creation order (tube
  numbers are handed out in creation order).
  KEYS  10 globals, then [11] the old set of tube names, then 5 per tube
  ARGV  [1..] the tube names of the old set (read by the caller)
  Returns how many tubes it listed (0: nothing to upgrade).
]]
--- @include "jobs"
if redis.call('TYPE', KEYS[GLOBALS + 1])['ok'] ~= 'set' then return 0 end
local order = {}
for i, name in ipairs(ARGV) do
  local b = GLOBALS + 1 + 5 * (i - 1)
  order[#order + 1] = { name = name, num = tonumber(redis.call('HGET', KEYS[b + 1], 'num') or '0') }
end
table.sort(order, function(a, b) return a.num < b.num end)
for _, t in ipairs(order) do
  if not redis.call('ZSCORE', K_TUBES, t.name) then redis.call('ZADD', K_TUBES, redis.call('ZCARD', K_TUBES), t.name) end
end
redis.call('DEL', KEYS[GLOBALS + 1])
return #order
