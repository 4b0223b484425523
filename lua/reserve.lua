#!lua
--[[
  Reserves the most urgent ready job (lowest pri, then lowest id) across the
  watched tubes that are not paused. Due delayed jobs and expired
  reservations of those tubes are moved to ready first, on Redis' clock.
  KEYS  8 globals, then 5 per watched tube
  ARGV  [1] owner (sidecar:connection)  [2..] watched tube names (KEYS order)
  Returns {1, id, ttr s, body, tube} when a job was reserved, else
          {0, ms until something may become reservable (a delay or a pause
              ending in these tubes), or -1}
]]
--- @include "common"
local now = now_ms()
local tubes, by_name = tubes_from(2)
for _, T in ipairs(tubes) do promote_delayed(T, now, 1000) end
expire_reservations(by_name, now, 100, {})

local best, best_pri, best_member
local wake = -1
local function wake_at(t)
  if wake < 0 or t < wake then wake = t end
end
for _, T in ipairs(tubes) do
  local top = redis.call('ZRANGE', T.ready, 0, 0, 'WITHSCORES')
  if top[1] then
    local paused_until = tonumber(redis.call('HGET', T.meta, 'pause-until') or '0')
    if paused_until > now then
      wake_at(paused_until)
    else
      local pri = tonumber(top[2])
      if not best or pri < best_pri or (pri == best_pri and top[1] < best_member) then
        best, best_pri, best_member = T, pri, top[1]
      end
    end
  end
  local soonest = redis.call('ZRANGE', T.delayed, 0, 0, 'WITHSCORES')
  if soonest[1] then wake_at(tonumber(soonest[2])) end
end
if not best then
  if wake < 0 then return { 0, -1 } end
  return { 0, wake - now }
end
local id = unpad(best_member)
redis.call('ZREM', best.ready, best_member)
local j = load_job(id)
if not j then return { 0, 0 } end -- a stale member is dropped; the caller looks again at once
enter_reserved(best, id, j, now, ARGV[1])
save_job(id, j)
return { 1, id, j[F_TTR], redis.call('HGET', K_BODIES, id), best.name }
