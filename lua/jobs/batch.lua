#!lua
--[[
  Applies a batch of job commands from any connections, in order, in one
  call: the sidecar sends what arrived while the previous call was in flight
  (src/store/batcher.ts), so batches form by themselves under load and a
  lone command goes out at once.
  KEYS  9 globals, then 5 per tube (includes/jobs.lua)
  ARGV  [1] events channel  [2] shard count  [3] this shard  [4] tube count n
        [5..4+n] tube names (KEYS order), then the ops, each a code and its
        fields (t = 1-based tube index):
          'p' t pri delay ttr body    put                      -> id
          'i'                         use up a job id          -> id
                                      (a put that ends in EXPECTED_CRLF or
                                      DRAINING, as beanstalkd)
          'd' owner id t              delete                   -> 1 | 0
          'r' owner id t pri delay    release                  -> 1 | 0
          'b' owner id t pri          bury                     -> 1 | 0
          't' owner id t              touch                    -> ttr s | 0
          'v' owner n k t1..tk        reserve up to n jobs     -> {id, ttr s, body, t, ...}
                                      from k tubes               (4 values a job, 1..n jobs)
                                      | ms until something may become reservable, or -1
  Delete, release, bury and touch act only on a job that is not reserved, or
  reserved by `owner` (delete), or reserved by `owner` (the others). Reserve
  takes the most urgent ready jobs (lowest pri, then lowest id) of the tubes
  that are not paused, after moving their due delayed jobs and expired
  reservations to ready (once per batch).
  Returns one result per op, in order.
  Also registered as batchAllowOom (flags=allow-oom): Redis out of memory
  refuses this script, but the sidecar then sends the ops that do not grow
  memory (all but puts) through that one, so workers can drain a full Redis.
]]
--- @variant allow-oom
--- @include "jobs"
local now = now_ms()
local shards, shard, ntubes = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local Ts, by_name = tubes_from(5, ntubes)
local inserted, became_ready, deleted, emptied = {}, {}, {}, {}
for i = 1, ntubes do inserted[i], became_ready[i], deleted[i] = 0, 0, 0 end

-- A job id tells its shard: id = seq * shards + shard (1, 2, 3, ... with one shard).
local function next_id()
  return fmt_int(redis.call('INCR', K_SEQ) * shards + shard)
end

-- A job put or released with a delay waits; without one it is ready (and wakes a waiter).
local function wait_or_ready(ti, id, j, delay)
  if delay > 0 then
    enter_delayed(Ts[ti], id, j, now, delay)
  else
    enter_ready(Ts[ti], id, j)
    became_ready[ti] = became_ready[ti] + 1
  end
end

local function put(ti, pri, delay, ttr, body)
  local T = Ts[ti]
  T.num = T.num or ensure_tube(T)
  local id = next_id()
  local j = { pri, delay, ttr, READY, now, 0, '', T.num, 0, 0, 0, 0, 0 }
  wait_or_ready(ti, id, j, delay)
  save_job(id, j, body)
  inserted[ti] = inserted[ti] + 1
  return id
end

local function delete(owner, id, ti)
  local j = load_job(id)
  if not j or (j[F_STATE] == RESERVED and j[F_OWNER] ~= owner) then return 0 end
  leave_state(Ts[ti], id, j)
  redis.call('HDEL', K_JOBS, id)
  deleted[ti] = deleted[ti] + 1
  emptied[ti] = true
  return 1
end

local function release(owner, id, ti, pri, delay)
  local j, body = load_reserved_by(id, owner)
  if not j then return 0 end
  local T = Ts[ti]
  leave_reserved(T, id)
  j[F_PRI] = pri
  j[F_DELAY] = delay
  j[F_RELEASES] = j[F_RELEASES] + 1
  wait_or_ready(ti, id, j, delay)
  save_job(id, j, body)
  return 1
end

local function bury(owner, id, ti, pri)
  local j, body = load_reserved_by(id, owner)
  if not j then return 0 end
  local T = Ts[ti]
  leave_reserved(T, id)
  j[F_PRI] = pri
  j[F_BURIES] = j[F_BURIES] + 1
  enter_buried(T, id, j)
  save_job(id, j, body)
  return 1
end

local function touch(owner, id, ti)
  local j, body = load_reserved_by(id, owner)
  if not j then return 0 end
  j[F_DUE] = now + j[F_TTR] * 1000
  redis.call('ZADD', K_RESERVED, j[F_DUE], member(id) .. Ts[ti].name)
  save_job(id, j, body)
  return j[F_TTR]
end

-- A reserve over at most this many tubes looks at each of them; over more
-- (a connection may watch thousands), only at those in ready-tubes, and it
-- finds due delayed jobs in the global delayed zset: its cost follows the
-- tubes that have jobs, not the tubes watched.
local FEW_TUBES = 64

-- Housekeeping for reserves, once per batch (and once per tube looked at).
local expired, promoted_all, promoted, pause_until = false, false, {}, {}
local index_of = {}
for i, T in ipairs(Ts) do index_of[T.name] = i end

local function tidy(tis)
  if not expired then
    expire_reservations(by_name, now, 100, {})
    expired = true
  end
  if #tis <= FEW_TUBES then
    for _, ti in ipairs(tis) do
      if not promoted[ti] then
        promote_delayed(Ts[ti], now, 1000)
        promoted[ti] = true
      end
    end
  elseif not promoted_all then
    -- Global members end with the tube's name; member_id reads only the id before it.
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'LIMIT', 0, 1000)) do
      local T = by_name[member_tube(m)]
      if T then promote(T, m) end
    end
    promoted_all = true
  end
end

local function paused_until(ti)
  local p = pause_until[ti]
  if not p then
    p = tonumber(redis.call('HGET', Ts[ti].meta, 'pause-until') or '0')
    pause_until[ti] = p
  end
  return p
end

-- The tubes a reserve looks at: all of a few, or those of many that have ready jobs.
local function to_look_at(tis)
  if #tis <= FEW_TUBES then return tis end
  local watched = {}
  for _, ti in ipairs(tis) do watched[ti] = true end
  -- ready-tubes, and the tubes this call has moved jobs of (written to ready-tubes at its end).
  local look, seen = {}, {}
  local function consider(name)
    local ti = index_of[name]
    if ti and watched[ti] and not seen[ti] then
      seen[ti] = true
      look[#look + 1] = ti
    end
  end
  for _, name in ipairs(redis.call('SMEMBERS', K_READY)) do consider(name) end
  for name in pairs(touched) do consider(name) end
  return look, watched
end

-- Nothing now: in how many ms may something become reservable (a delay or a pause ending), or -1.
local function wake_after(tis, look, watched)
  local wake = -1
  local function wake_at(t)
    if wake < 0 or t < wake then wake = t end
  end
  for _, ti in ipairs(look) do
    if paused_until(ti) > now and redis.call('ZCARD', Ts[ti].ready) > 0 then wake_at(paused_until(ti)) end
  end
  if not watched then
    for _, ti in ipairs(tis) do
      local soonest = redis.call('ZRANGE', Ts[ti].delayed, 0, 0, 'WITHSCORES')
      if soonest[1] then wake_at(tonumber(soonest[2])) end
    end
  else
    -- The soonest delayed job of a watched tube, among the first 200 of all;
    -- if none is there, look again when the 200th is due.
    local soonest = redis.call('ZRANGE', K_DELAYED, 0, 199, 'WITHSCORES')
    for k = 1, #soonest, 2 do
      local ti = index_of[member_tube(soonest[k])]
      if ti and watched[ti] then
        wake_at(tonumber(soonest[k + 1]))
        break
      end
      if k == 399 then wake_at(tonumber(soonest[k + 1])) end
    end
  end
  if wake < 0 then return -1 end
  return wake - now
end

local function reserve(owner, n, tis)
  tidy(tis)
  local look, watched = to_look_at(tis)
  local taken = {}
  while #taken < 4 * n do
    local best, best_pri, best_member
    for _, ti in ipairs(look) do
      if paused_until(ti) <= now then
        local top = redis.call('ZRANGE', Ts[ti].ready, 0, 0, 'WITHSCORES')
        if top[1] then
          local pri = tonumber(top[2])
          if not best or pri < best_pri or (pri == best_pri and top[1] < best_member) then
            best, best_pri, best_member = ti, pri, top[1]
          end
        end
      end
    end
    if not best then break end
    local T = Ts[best]
    unready(T, best_member, best_pri)
    local id = member_id(best_member)
    local j, body = load_job(id)
    if j then -- else a stale member of a job that is gone: look again
      enter_reserved(T, id, j, now, owner)
      save_job(id, j, body)
      local k = #taken
      taken[k + 1], taken[k + 2], taken[k + 3], taken[k + 4] = id, j[F_TTR], body, best
    end
  end
  if #taken > 0 then return taken end
  return wake_after(tis, look, watched)
end

local results = {}
local a = 5 + ntubes
while a <= #ARGV do
  local op = ARGV[a]
  local r
  if op == 'p' then
    r = put(tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), ARGV[a + 5])
    a = a + 6
  elseif op == 'i' then
    r = next_id()
    a = a + 1
  elseif op == 'd' then
    r = delete(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]))
    a = a + 4
  elseif op == 'r' then
    r = release(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]))
    a = a + 6
  elseif op == 'b' then
    r = bury(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]))
    a = a + 5
  elseif op == 't' then
    r = touch(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]))
    a = a + 4
  elseif op == 'v' then
    local k, tis = tonumber(ARGV[a + 3]), {}
    for i = 1, k do tis[i] = tonumber(ARGV[a + 3 + i]) end
    r = reserve(ARGV[a + 1], tonumber(ARGV[a + 2]), tis)
    a = a + 4 + k
  else
    return redis.error_reply('ERR batch: unknown op ' .. tostring(op))
  end
  results[#results + 1] = r
end

local total = 0
for i, T in ipairs(Ts) do
  if inserted[i] > 0 then redis.call('HINCRBY', T.meta, 'total-jobs', inserted[i]) end
  if deleted[i] > 0 then redis.call('HINCRBY', T.meta, 'cmd-delete', deleted[i]) end
  if emptied[i] then collect_tube(T, now) end
  notify_ready(ARGV[1], T.name, became_ready[i])
  total = total + inserted[i]
end
if total > 0 then redis.call('HINCRBY', K_STATS, 'total-jobs', total) end
flush_counts()
return results
