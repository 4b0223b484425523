#!lua flags=allow-oom
--[[
  Housekeeping tick: due delayed jobs and expired reservations of the given
  tubes go to ready (bounded by `limit` per kind), waking blocked reserves.
  The sidecar reads which tubes are due first, so every key is in KEYS.
  KEYS  10 globals, then 5 per tube
  ARGV  [1] events channel  [2] limit  [3..] tube names
  Returns {jobs moved, ms until the next due delay or deadline (0: more are
  due now, -1: none)}
]]
--- @include "jobs"
--- @variant sections
local now = now_ms()
local limit = tonumber(ARGV[2])
local tubes, by_name = tubes_from(3)
local moved, total = {}, 0
for _, T in ipairs(tubes) do moved[T.name] = promote_delayed(T, now, limit) end
expire_reservations(by_name, now, limit, moved)
for name, count in pairs(moved) do
  total = total + count
  notify_ready(ARGV[1], name, count)
end
write_back() -- before reading the zsets' first deadlines
local next_due = -1
for _, key in ipairs({ K_DELAYED, K_RESERVED }) do
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] then
    local due = tonumber(first[2])
    if next_due < 0 or due < next_due then next_due = due end
  end
end
if next_due >= 0 then next_due = math.max(0, next_due - now) end
return { total, next_due }
