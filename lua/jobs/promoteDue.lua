#!lua flags=allow-oom
--[[
  Housekeeping tick: due delayed jobs and expired reservations of the given
  tubes go to ready (bounded by `limit` per kind), waking blocked reserves;
  put-with jobs not reserved by their expiry are deleted or buried (counted
  in their tube's jobs-expired); put-with keys whose window ran out are
  forgotten.
  The sidecar reads which tubes are due first, so every key is in KEYS.
  KEYS  10 globals, then 5 per tube
  ARGV  [1] events channel  [2] limit  [3..] tube names
  Returns {jobs moved, ms until the next due delay, deadline or expiry (0:
  more are due now, -1: none)}
]]
--- @include "jobs"
--- @variant sections

-- put-with jobs due to expire by `now` (of tubes in by_name; others wait
-- for the next tick, which names them) that no reserve took.
local function expire_jobs(by_name, now, limit)
  local emptied, expiring = {}, tag_key('expiring')
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', expiring, '-inf', now, 'LIMIT', 0, limit)) do
    local T = by_name[member_tube(m)]
    if T then
      redis.call('ZREM', expiring, m)
      local id = member_id(m)
      local j = load_job(id)
      if j and j[F_EXPIRES] ~= 0 and j[F_STATE] ~= RESERVED then
        j[F_EXPIRES] = 0
        redis.call('HINCRBY', T.meta, 'jobs-expired', 1)
        leave_state(T, id, j)
        if j[F_EXPIRY_BURY] == 1 then
          enter_buried(T, id, j)
          save_job(id, j)
        else
          delete_job(T, id)
          emptied[T.name] = T
        end
      end
    end
  end
  return emptied
end

local now = now_ms()
local limit = tonumber(ARGV[2])
local tubes, by_name = tubes_from(3)
local moved, total = {}, 0
for _, T in ipairs(tubes) do moved[T.name] = promote_delayed(T, now, limit) end
expire_reservations(by_name, now, limit, moved)
local emptied = expire_jobs(by_name, now, limit)
forget_due_keys(now, limit)
for name, count in pairs(moved) do
  total = total + count
  notify_ready(ARGV[1], name, count)
end
write_back() -- before reading the zsets' first deadlines
for _, T in pairs(emptied) do collect_tube(T, now) end
local next_due = -1
for _, key in ipairs({ K_DELAYED, K_RESERVED, tag_key('expiring') }) do
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if first[2] then
    local due = tonumber(first[2])
    if next_due < 0 or due < next_due then next_due = due end
  end
end
if next_due >= 0 then next_due = math.max(0, next_due - now) end
return { total, next_due }
