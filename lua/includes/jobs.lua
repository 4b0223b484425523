-- Helpers of the job scripts (lua/jobs/), included by the loader (src/store/redis/scripts.ts).
--
-- Key layout (all keys share one hash tag, see src/store/layout.ts). Every script
-- receives the same 9 global keys first, then 5 keys per tube it touches:
--   KEYS[1] jobs       hash   id -> job record: msgpack metadata, then the body bytes
--   KEYS[2] tube-names hash   tube number -> name (job records name their tube by number)
--   KEYS[3] delayed    zset   ready-at ms, member member(id)..tube   (all tubes; drives the timers)
--   KEYS[4] reserved   zset   deadline ms, member member(id)..tube   (all tubes; drives TTR expiry)
--   KEYS[5] stats      hash   total-jobs, job-timeouts (cumulative), tube-seq; and the
--                             jobs of all tubes now ready, urgent and buried (kept as
--                             jobs move, so `stats` costs the same for 10 tubes or 10,000)
--   KEYS[6] tube-order zset   names of tubes that exist, score = position in list-tubes
--   KEYS[7] nodes      zset   sidecar id -> expiry ms of its heartbeat
--   KEYS[8] seq        string job sequence
--   KEYS[9] ready-tubes set    the tubes whose ready set is not empty (a reserve over
--                             thousands of watched tubes looks only at these)
--   per tube i (base = 9 + 5*(i-1)): meta hash, ready zset (score pri, member
--   member(id)), delayed zset (score ready-at), buried zset (score bury order),
--   refs hash (sidecar id -> connections using or watching the tube)
-- A queued job costs one hash entry (metadata and body in one value, so one
-- allocation) plus one zset entry; see bench/memory.ts for the measured bytes.
local K_JOBS, K_TUBE_NAMES, K_DELAYED, K_RESERVED, K_STATS, K_TUBES, K_NODES, K_SEQ, K_READY =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]

local READY, DELAYED, RESERVED, BURIED = 1, 2, 3, 4
local URGENT = 1023 -- pri < 1024 counts as urgent

--- @include "clock"

-- Zset member of a job id: its digit count as one character, then the id.
-- Members sort in id order (fewer digits first), so a zset of equal scores
-- (same priority / same due time) hands out the lowest id first, and the
-- member is as short as the id allows.
local function member(id)
  return string.char(48 + #id) .. id
end

local function member_id(m)
  return string.sub(m, 2, 1 + string.byte(m, 1) - 48)
end

-- The tube name a global delayed/reserved member ends with.
local function member_tube(m)
  return string.sub(m, 2 + string.byte(m, 1) - 48)
end

local function tube_keys(i)
  local b = 9 + 5 * (i - 1)
  return { meta = KEYS[b + 1], ready = KEYS[b + 2], delayed = KEYS[b + 3], buried = KEYS[b + 4], refs = KEYS[b + 5] }
end

-- A tube's keys derived from its name, as src/store/layout.ts builds them
-- (ShardKeys.tube), for a reserve over more tubes than travel in KEYS. They
-- share the hash tag of the globals, so they live in the same slot.
local TAG = string.sub(KEYS[1], 1, -6) -- KEYS[1] is <tag>:jobs
local function tube_named(name)
  local base = TAG .. ':tube:' .. name
  return { name = name, meta = base, ready = base .. ':ready', delayed = base .. ':delayed', buried = base .. ':buried', refs = base .. ':refs' }
end

-- Job record fields, by index in the msgpack array. The counters come last
-- and trailing zeros are not stored: a fresh job's metadata is ~20 bytes.
local F_PRI, F_DELAY, F_TTR, F_STATE, F_CREATED, F_DUE, F_OWNER, F_TUBE,
      F_RESERVES, F_TIMEOUTS, F_RELEASES, F_BURIES, F_KICKS = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
local FIELDS, COUNTERS_FROM = 13, 9

-- The job's metadata (counters filled in) and its body, or nil.
local function load_job(id)
  local raw = redis.call('HGET', K_JOBS, id)
  if not raw then return nil end
  local next_at, j = cmsgpack.unpack_one(raw)
  for f = COUNTERS_FROM, FIELDS do j[f] = j[f] or 0 end
  if next_at < 0 then return j, '' end
  return j, string.sub(raw, next_at + 1)
end

local function save_job(id, j, body)
  local n = FIELDS
  while n >= COUNTERS_FROM and j[n] == 0 do n = n - 1 end
  local rec = {}
  for f = 1, n do rec[f] = j[f] end
  redis.call('HSET', K_JOBS, id, cmsgpack.pack(rec) .. body)
end

-- The job and body, when it is reserved by `owner`; nil otherwise (release,
-- bury and touch are for the reserving connection only).
local function load_reserved_by(id, owner)
  local j, body = load_job(id)
  if j and j[F_STATE] == RESERVED and j[F_OWNER] == owner then return j, body end
  return nil
end

local function fmt_int(n)
  return string.format('%.0f', n)
end

-- The counts of all tubes' ready (and urgent) and buried jobs, and the set
-- of tubes with ready jobs, follow every ZADD and ZREM of a ready or buried
-- set (by what Redis says it changed). They are summed here and written once,
-- by flush_counts() at the end of every script that moves jobs.
local moved_ready, moved_urgent, moved_buried, touched = 0, 0, 0, {}

local function count_ready(T, n, pri)
  moved_ready = moved_ready + n
  if pri <= URGENT then moved_urgent = moved_urgent + n end
  touched[T.name] = T
end

local function unready(T, m, pri)
  local removed = redis.call('ZREM', T.ready, m)
  if removed > 0 then count_ready(T, -removed, pri) end
end

local function unbury(T, m)
  moved_buried = moved_buried - redis.call('ZREM', T.buried, m)
end

local function flush_counts()
  if moved_ready ~= 0 then redis.call('HINCRBY', K_STATS, 'jobs-ready', moved_ready) end
  if moved_urgent ~= 0 then redis.call('HINCRBY', K_STATS, 'jobs-urgent', moved_urgent) end
  if moved_buried ~= 0 then redis.call('HINCRBY', K_STATS, 'jobs-buried', moved_buried) end
  for name, T in pairs(touched) do
    if redis.call('ZCARD', T.ready) > 0 then redis.call('SADD', K_READY, name) else redis.call('SREM', K_READY, name) end
  end
  moved_ready, moved_urgent, moved_buried, touched = 0, 0, 0, {}
end

-- The state helpers below take T, a tube's keys with its name (tube_keys).
-- Moves a job (whatever it was) into its tube's ready set.
local function enter_ready(T, id, j)
  j[F_STATE] = READY
  j[F_DUE] = 0
  j[F_OWNER] = ''
  local added = redis.call('ZADD', T.ready, j[F_PRI], member(id))
  if added > 0 then count_ready(T, added, j[F_PRI]) end
end

local function enter_delayed(T, id, j, now, delay_s)
  j[F_STATE] = DELAYED
  j[F_DUE] = now + delay_s * 1000
  j[F_OWNER] = ''
  local m = member(id)
  redis.call('ZADD', T.delayed, j[F_DUE], m)
  redis.call('ZADD', K_DELAYED, j[F_DUE], m .. T.name)
end

local function leave_reserved(T, id)
  redis.call('ZREM', K_RESERVED, member(id) .. T.name)
  redis.call('HINCRBY', T.meta, 'reserved', -1)
end

local function leave_delayed(T, id)
  local m = member(id)
  redis.call('ZREM', T.delayed, m)
  redis.call('ZREM', K_DELAYED, m .. T.name)
end

-- Takes a job out of whatever state it is in (used by delete and reserve-job).
local function leave_state(T, id, j)
  local s = j[F_STATE]
  if s == READY then unready(T, member(id), j[F_PRI])
  elseif s == DELAYED then leave_delayed(T, id)
  elseif s == BURIED then unbury(T, member(id))
  else leave_reserved(T, id) end
end

local function enter_reserved(T, id, j, now, owner)
  j[F_STATE] = RESERVED
  j[F_OWNER] = owner
  j[F_DUE] = now + j[F_TTR] * 1000
  j[F_RESERVES] = j[F_RESERVES] + 1
  redis.call('ZADD', K_RESERVED, j[F_DUE], member(id) .. T.name)
  redis.call('HINCRBY', T.meta, 'reserved', 1)
end

local function enter_buried(T, id, j)
  j[F_STATE] = BURIED
  j[F_DUE] = 0
  j[F_OWNER] = ''
  -- Buried jobs are a FIFO: score by a per-tube counter.
  moved_buried = moved_buried + redis.call('ZADD', T.buried, redis.call('HINCRBY', T.meta, 'bury-seq', 1), member(id))
end

-- Wakes blocked reserves on every sidecar: "<count> <tube>". The loader
-- makes this SPUBLISH on a Redis Cluster (sharded pub/sub: the channel
-- shares the shard's hash tag, so a wake-up stays on the shard's node).
local PUBLISH = 'PUBLISH'
local function notify_ready(channel, tube, count)
  if count > 0 then redis.call(PUBLISH, channel, count .. ' ' .. tube) end
end

-- The tubes in list-tubes order, kept as beanstalkd keeps its array of
-- tubes (ms.c): a new tube is appended; a removed one's place is taken by the
-- last. Positions are the zset's scores.
local function unlist_tube(name)
  local at = redis.call('ZSCORE', K_TUBES, name)
  if not at then return end
  local last = redis.call('ZRANGE', K_TUBES, -1, -1)[1]
  redis.call('ZREM', K_TUBES, name)
  if last ~= name then redis.call('ZADD', K_TUBES, at, last) end
end

-- A tube exists while it holds a job or a live sidecar references it; the
-- default tube always exists. Returns true when the tube was removed.
local function collect_tube(T, now)
  if T.name == 'default' then return false end
  if redis.call('ZCARD', T.ready) + redis.call('ZCARD', T.delayed) + redis.call('ZCARD', T.buried) > 0 then return false end
  local meta = redis.call('HMGET', T.meta, 'reserved', 'num')
  if tonumber(meta[1] or '0') > 0 then return false end
  local refs = redis.call('HGETALL', T.refs)
  for i = 1, #refs, 2 do
    local expiry = redis.call('ZSCORE', K_NODES, refs[i])
    if expiry and tonumber(expiry) > now and tonumber(refs[i + 1]) > 0 then return false end
  end
  redis.call('DEL', T.meta, T.refs)
  unlist_tube(T.name)
  if meta[2] then redis.call('HDEL', K_TUBE_NAMES, meta[2]) end
  return true
end

-- Creates the tube if needed, at the end of list-tubes; returns its number (what job records store).
local function ensure_tube(T)
  local num = redis.call('HGET', T.meta, 'num')
  if num then return tonumber(num) end
  num = redis.call('HINCRBY', K_STATS, 'tube-seq', 1)
  redis.call('HSET', T.meta, 'num', num)
  redis.call('HSET', K_TUBE_NAMES, num, T.name)
  redis.call('ZADD', K_TUBES, redis.call('ZCARD', K_TUBES), T.name)
  return num
end

local function tube_name(j)
  return redis.call('HGET', K_TUBE_NAMES, j[F_TUBE])
end

-- The job record as a flat reply for peek / stats-job (time left in µs).
local function job_reply(id, j, now)
  local time_left = 0
  if j[F_STATE] == RESERVED or j[F_STATE] == DELAYED then
    time_left = us_until(j[F_DUE])
  end
  return { id, tube_name(j), j[F_STATE], fmt_int(j[F_PRI]), fmt_int(now - j[F_CREATED]), fmt_int(j[F_DELAY]), fmt_int(j[F_TTR]),
           fmt_int(time_left), j[F_RESERVES], j[F_TIMEOUTS], j[F_RELEASES], j[F_BURIES], j[F_KICKS] }
end

-- A delayed job of tube T (its tube-delayed member m) becomes ready; false when it is gone.
local function promote(T, m)
  local id = member_id(m)
  local j, body = load_job(id)
  if not j then return false end
  leave_delayed(T, id)
  enter_ready(T, id, j)
  save_job(id, j, body)
  return true
end

-- Due delayed jobs of one tube become ready. Returns how many moved.
local function promote_delayed(T, now, limit)
  local due = redis.call('ZRANGEBYSCORE', T.delayed, '-inf', now, 'LIMIT', 0, limit)
  local moved = 0
  for _, m in ipairs(due) do
    if promote(T, m) then moved = moved + 1
    else redis.call('ZREM', T.delayed, m) end -- stale member of a job that is gone
  end
  return moved
end

-- TTR expiry: reservations past their deadline go back to ready (counting a
-- timeout), for the tubes in by_name (name -> tube keys). Adds to moved[name].
local function expire_reservations(by_name, now, limit, moved)
  local due = redis.call('ZRANGEBYSCORE', K_RESERVED, '-inf', now, 'LIMIT', 0, limit)
  for _, m in ipairs(due) do
    local T = by_name[member_tube(m)]
    if T then
      local id = member_id(m)
      local j, body = load_job(id)
      if not j then
        redis.call('ZREM', K_RESERVED, m) -- stale member of a job that is gone
      else
        leave_reserved(T, id)
        j[F_TIMEOUTS] = j[F_TIMEOUTS] + 1
        redis.call('HINCRBY', K_STATS, 'job-timeouts', 1)
        enter_ready(T, id, j)
        save_job(id, j, body)
        moved[T.name] = (moved[T.name] or 0) + 1
      end
    end
  end
end

-- The tubes named in ARGV[first..first+count-1] (default: to the end) with
-- their keys, in KEYS order.
local function tubes_from(first, count)
  local list, by_name = {}, {}
  local last = count and (first + count - 1) or #ARGV
  for i = first, last do
    local T = tube_keys(i - first + 1)
    T.name = ARGV[i]
    list[#list + 1] = T
    by_name[T.name] = T
  end
  return list, by_name
end
