-- Shared helpers, included into every script by the loader (src/store/scripts.ts).
--
-- Key layout (all keys share one hash tag, see src/store/keys.ts). Every script
-- receives the same 8 global keys first, then 5 keys per tube it touches:
--   KEYS[1] jobs     hash   id -> msgpack job record (see load_job)
--   KEYS[2] bodies   hash   id -> body bytes
--   KEYS[3] delayed  zset   ready-at ms, member pad(id)..tube   (all tubes; drives the timers)
--   KEYS[4] reserved zset   deadline ms, member pad(id)..tube   (all tubes; drives TTR expiry)
--   KEYS[5] stats    hash   total-jobs, job-timeouts (cumulative)
--   KEYS[6] tubes    set    names of tubes that exist
--   KEYS[7] nodes    zset   sidecar id -> expiry ms of its heartbeat
--   KEYS[8] seq      string job sequence
--   per tube i (base = 8 + 5*(i-1)): meta hash, ready zset (score pri, member
--   pad(id)), delayed zset (score ready-at), buried zset (score bury order),
--   refs hash (sidecar id -> connections using or watching the tube)
local K_JOBS, K_BODIES, K_DELAYED, K_RESERVED, K_STATS, K_TUBES, K_NODES, K_SEQ =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local READY, DELAYED, RESERVED, BURIED = 1, 2, 3, 4
local ID_WIDTH = 16
local URGENT = 1023 -- pri < 1024 counts as urgent

-- Redis' own clock, in milliseconds: one clock for every sidecar.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Fixed-width ids sort lexicographically in id order, so a zset of equal
-- scores (same priority / same due time) hands out the lowest id first.
local function pad(id)
  return string.rep('0', ID_WIDTH - #id) .. id
end

local function unpad(p)
  return (string.gsub(string.sub(p, 1, ID_WIDTH), '^0+', ''))
end

local function tube_keys(i)
  local b = 8 + 5 * (i - 1)
  return { meta = KEYS[b + 1], ready = KEYS[b + 2], delayed = KEYS[b + 3], buried = KEYS[b + 4], refs = KEYS[b + 5] }
end

-- Job record fields, by index in the msgpack array.
local F_TUBE, F_PRI, F_DELAY, F_TTR, F_STATE, F_CREATED, F_DUE, F_OWNER,
      F_RESERVES, F_TIMEOUTS, F_RELEASES, F_BURIES, F_KICKS = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13

local function load_job(id)
  local raw = redis.call('HGET', K_JOBS, id)
  if not raw then return nil end
  return cmsgpack.unpack(raw)
end

-- The job, when it is reserved by `owner`; nil otherwise (release, bury and
-- touch are for the reserving connection only).
local function load_reserved_by(id, owner)
  local j = load_job(id)
  if j and j[F_STATE] == RESERVED and j[F_OWNER] == owner then return j end
  return nil
end

local function save_job(id, j)
  redis.call('HSET', K_JOBS, id, cmsgpack.pack(j))
end

local function fmt_int(n)
  return string.format('%.0f', n)
end

-- Moves a job (whatever it was) into its tube's ready set.
local function enter_ready(T, id, j)
  j[F_STATE] = READY
  j[F_DUE] = 0
  j[F_OWNER] = ''
  redis.call('ZADD', T.ready, j[F_PRI], pad(id))
end

local function enter_delayed(T, id, j, now, delay_s)
  j[F_STATE] = DELAYED
  j[F_DUE] = now + delay_s * 1000
  j[F_OWNER] = ''
  redis.call('ZADD', T.delayed, j[F_DUE], pad(id))
  redis.call('ZADD', K_DELAYED, j[F_DUE], pad(id) .. j[F_TUBE])
end

local function leave_reserved(T, id, j)
  redis.call('ZREM', K_RESERVED, pad(id) .. j[F_TUBE])
  redis.call('HINCRBY', T.meta, 'reserved', -1)
end

local function leave_delayed(T, id, j)
  redis.call('ZREM', T.delayed, pad(id))
  redis.call('ZREM', K_DELAYED, pad(id) .. j[F_TUBE])
end

-- Takes a job out of whatever state it is in (used by delete and reserve-job).
local function leave_state(T, id, j)
  local s = j[F_STATE]
  if s == READY then redis.call('ZREM', T.ready, pad(id))
  elseif s == DELAYED then leave_delayed(T, id, j)
  elseif s == BURIED then redis.call('ZREM', T.buried, pad(id))
  else leave_reserved(T, id, j) end
end

local function enter_reserved(T, id, j, now, owner)
  j[F_STATE] = RESERVED
  j[F_OWNER] = owner
  j[F_DUE] = now + j[F_TTR] * 1000
  j[F_RESERVES] = j[F_RESERVES] + 1
  redis.call('ZADD', K_RESERVED, j[F_DUE], pad(id) .. j[F_TUBE])
  redis.call('HINCRBY', T.meta, 'reserved', 1)
end

local function enter_buried(T, id, j)
  j[F_STATE] = BURIED
  j[F_DUE] = 0
  j[F_OWNER] = ''
  -- Buried jobs are a FIFO: score by a per-tube counter.
  redis.call('ZADD', T.buried, redis.call('HINCRBY', T.meta, 'bury-seq', 1), pad(id))
end

-- Wakes blocked reserves on every sidecar: "<count> <tube>".
local function notify_ready(channel, tube, count)
  if count > 0 then redis.call('PUBLISH', channel, count .. ' ' .. tube) end
end

-- A tube exists while it holds a job or a live sidecar references it; the
-- default tube always exists. Returns true when the tube was removed.
local function collect_tube(T, name, now)
  if name == 'default' then return false end
  if redis.call('ZCARD', T.ready) + redis.call('ZCARD', T.delayed) + redis.call('ZCARD', T.buried) > 0 then return false end
  if tonumber(redis.call('HGET', T.meta, 'reserved') or '0') > 0 then return false end
  local refs = redis.call('HGETALL', T.refs)
  for i = 1, #refs, 2 do
    local expiry = redis.call('ZSCORE', K_NODES, refs[i])
    if expiry and tonumber(expiry) > now and tonumber(refs[i + 1]) > 0 then return false end
  end
  redis.call('DEL', T.meta, T.refs)
  redis.call('SREM', K_TUBES, name)
  return true
end

local function ensure_tube(name)
  redis.call('SADD', K_TUBES, name)
end

-- The job record as a flat reply for peek / reserve / stats-job.
local function job_reply(id, j, now)
  local time_left = 0
  if j[F_STATE] == RESERVED or j[F_STATE] == DELAYED then
    time_left = math.max(0, j[F_DUE] - now)
  end
  return { id, j[F_TUBE], j[F_STATE], fmt_int(j[F_PRI]), fmt_int(now - j[F_CREATED]), fmt_int(j[F_DELAY]), fmt_int(j[F_TTR]),
           fmt_int(time_left), j[F_RESERVES], j[F_TIMEOUTS], j[F_RELEASES], j[F_BURIES], j[F_KICKS] }
end

-- Due delayed jobs of one tube become ready. Returns how many moved.
local function promote_delayed(T, now, limit)
  local due = redis.call('ZRANGEBYSCORE', T.delayed, '-inf', now, 'LIMIT', 0, limit)
  local moved = 0
  for _, p in ipairs(due) do
    local id = unpad(p)
    local j = load_job(id)
    if j then
      leave_delayed(T, id, j)
      enter_ready(T, id, j)
      save_job(id, j)
      moved = moved + 1
    else
      redis.call('ZREM', T.delayed, p) -- stale member of a job that is gone
    end
  end
  return moved
end

-- TTR expiry: reservations past their deadline go back to ready (counting a
-- timeout), for the tubes in by_name (name -> tube keys). Adds to moved[name].
local function expire_reservations(by_name, now, limit, moved)
  local due = redis.call('ZRANGEBYSCORE', K_RESERVED, '-inf', now, 'LIMIT', 0, limit)
  for _, p in ipairs(due) do
    local name = string.sub(p, ID_WIDTH + 1)
    local T = by_name[name]
    local id = unpad(p)
    local j = T and load_job(id)
    if T and not j then
      redis.call('ZREM', K_RESERVED, p) -- stale member of a job that is gone
    elseif T then
      leave_reserved(T, id, j)
      j[F_TIMEOUTS] = j[F_TIMEOUTS] + 1
      redis.call('HINCRBY', K_STATS, 'job-timeouts', 1)
      enter_ready(T, id, j)
      save_job(id, j)
      moved[name] = (moved[name] or 0) + 1
    end
  end
end

-- The tubes named in ARGV[first..] with their keys, in KEYS order.
local function tubes_from(first)
  local list, by_name = {}, {}
  for i = first, #ARGV do
    local T = tube_keys(i - first + 1)
    T.name = ARGV[i]
    list[#list + 1] = T
    by_name[T.name] = T
  end
  return list, by_name
end
