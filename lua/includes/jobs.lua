-- Helpers of the job scripts (lua/jobs/), included by the loader (src/store/redis/scripts.ts)
-- once in redstalk's function library: FUNCTION LOAD runs this file once, so its
-- helpers are made once, not per call. What a call changes here (its keys, the
-- write-back cache below) is set afresh by begin_jobs, at the start of every call.
--
-- Key layout (all keys share one hash tag, see src/store/layout.ts). Every script
-- receives the same GLOBALS (10) keys first, then 5 keys per tube it touches:
--   KEYS[1] jobs       hash   id -> job record: msgpack metadata, then the body bytes
--                             (a body of BODY_APART bytes or more is kept apart in
--                             KEYS[10], so a change of state does not copy it)
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
--   KEYS[10] bodies    hash   id -> body, of the jobs whose body is kept apart
--   and, derived from the tag (the same slot), for put-with and tube-set:
--   <tag>:tube-settings hash   tube name -> "max-reserved reserve-rate dedup-window"
--                              (only tubes with a setting; outlives the tube)
--   <tag>:unique       hash   "<tube> <key>" -> id of the job put-with that key
--   <tag>:unique-gone  zset   "<tube> <key>" -> ms when it is forgotten (its job
--                              was deleted: the tube's dedup window runs)
--   <tag>:expiring     zset   expiry ms, member member(id)..tube (put-with jobs
--                              not reserved yet; swept by promoteDue.lua)
--   <tube meta>:spent  zset   "<id>.<reserves>" -> ms of a reserve of the tube's, the last
--                              second's (a tube with a reserve-rate)
--   per tube i (base = 10 + 5*(i-1)): meta hash, ready zset (score pri, member
--   member(id)), delayed zset (score ready-at), buried zset (score bury order),
--   refs hash (sidecar id -> connections using or watching the tube)
-- A queued job costs one hash entry (metadata and body in one value, so one
-- allocation) plus one zset entry; see bench/memory.ts for the measured bytes.
-- A large body costs one more hash entry and is never copied again after its put.
--
-- Writes are kept back and made by write_back(), which every script that
-- moves jobs calls at its end: job records (one HSET, one HDEL), reservations
-- (one ZADD, one ZREM on the reserved zset, one HINCRBY per tube), the
-- counts. Reads go through the same tables (load_job, expire_reservations),
-- so a script sees its own writes before they are made. Each redis.call
-- costs its Lua <-> Redis crossing and, Redis replicating scripts by their
-- effects, its own AOF/replica entry.
local K_JOBS, K_TUBE_NAMES, K_DELAYED, K_RESERVED, K_STATS, K_TUBES, K_NODES, K_SEQ, K_READY, K_BODIES -- this call's (begin_jobs)
local GLOBALS = 10

local READY, DELAYED, RESERVED, BURIED = 1, 2, 3, 4
local URGENT = 1023 -- pri < 1024 counts as urgent

--- @include "clock"
--- @include "tag"
--- @include "unique"

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
  local b = GLOBALS + 5 * (i - 1)
  return { meta = KEYS[b + 1], ready = KEYS[b + 2], delayed = KEYS[b + 3], buried = KEYS[b + 4], refs = KEYS[b + 5] }
end

-- A tube's keys derived from its name, as src/store/layout.ts builds them
-- (ShardKeys.tube), for a reserve over more tubes than travel in KEYS. They
-- share the hash tag of the globals, so they live in the same slot.
local function tube_named(name)
  local base = TAG .. ':tube:' .. name
  return { name = name, meta = base, ready = base .. ':ready', delayed = base .. ':delayed', buried = base .. ':buried', refs = base .. ':refs' }
end

-- Job record fields, by index in the msgpack array. The counters come last
-- and trailing zeros are not stored: a fresh job's metadata is ~20 bytes.
-- F_APART is 1 when the body is kept in K_BODIES (0, so not stored, else).
-- put-with's: F_KEY its key (0: none), F_EXPIRES ms when it expires unless
-- reserved (0: never, or reserved once), F_EXPIRY_BURY 1 to bury it then;
-- F_LIMITED 1 while it is reserved from a tube with max-reserved (its leaving
-- frees a slot: wake a waiter). Plain jobs leave them 0, so not stored.
local F_PRI, F_DELAY, F_TTR, F_STATE, F_CREATED, F_DUE, F_OWNER, F_TUBE,
      F_RESERVES, F_TIMEOUTS, F_RELEASES, F_BURIES, F_KICKS, F_APART = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14
local F_KEY, F_EXPIRES, F_EXPIRY_BURY, F_LIMITED = 15, 16, 17, 18
local FIELDS, COUNTERS_FROM = 18, 9

-- Bodies this long or longer are kept apart. Below it, copying the body into
-- the record again at each change of state costs Redis no more than a second
-- hash entry (its HSET, HGET and HDEL, and ~90 bytes) would: over a job's life
-- (put, reserve, release, reserve, delete) bench/record.ts measured apart at
-- 2-3% more Redis CPU for 100 and 512 bytes, 16% less at 1 KB, 38% at 4 KB.
local BODY_APART = 1024
-- The record format of this library: 2 keeps large bodies apart. A sidecar of
-- format 1 would read such a record's body as empty, so bodies are kept apart
-- only once every live sidecar of the shard has said it reads format 2 (its
-- heartbeat: heartbeat.lua, raise_format below), recorded as the data set's
-- `record-format` in K_STATS.
local RECORD_FORMAT = 2

-- Job records go through a cache of the records this script has read or
-- written: jobs_meta[id] = metadata (false: no such job), jobs_body[id] =
-- body (of a body kept apart: once read or put), jobs_inline[id] = the record
-- read and where its body starts (cut out when asked: a delete never is).
-- Writes stay in it and go out
-- with write_back(), one HSET and one HDEL for all: a job put and reserved, or
-- reserved and deleted, in one batch is written once or never. Every read of
-- K_JOBS goes through load_job (or prefetch_jobs), so the cache is never stale.
local jobs_meta, jobs_body, jobs_raw, jobs_dirty, jobs_unstored, jobs_inline, jobs_inline_at
local jobs_to_write, jobs_to_delete, bodies_to_delete
-- Whether this call may keep large bodies apart (nil: not looked up yet).
local bodies_apart

local function encode_job(j, body)
  -- Packs j itself, its trailing zero counters cleared for the while.
  local n = FIELDS
  while n >= COUNTERS_FROM and j[n] == 0 do
    j[n] = nil
    n = n - 1
  end
  local rec = cmsgpack.pack(j) .. body
  for f = n + 1, FIELDS do j[f] = 0 end
  return rec
end

-- The job's metadata (counters filled in), or nil. Its body: job_body(id).
local function load_job(id)
  local j = jobs_meta[id]
  if j == nil then
    local raw = jobs_raw[id]
    if raw == nil then raw = redis.call('HGET', K_JOBS, id) else jobs_raw[id] = nil end
    j = false
    if raw then
      local next_at
      next_at, j = cmsgpack.unpack_one(raw)
      for f = #j + 1, FIELDS do j[f] = 0 end -- the zeros encode_job left out (the fields are contiguous)
      if j[F_APART] == 0 then jobs_inline[id], jobs_inline_at[id] = raw, next_at end
    end
    jobs_meta[id] = j
  end
  return j or nil
end

-- The body of a job load_job found.
local function job_body(id)
  local body = jobs_body[id]
  if body == nil then
    local raw = jobs_inline[id]
    if raw then
      local at = jobs_inline_at[id]
      body = at < 0 and '' or string.sub(raw, at + 1)
    else
      body = redis.call('HGET', K_BODIES, id) or ''
    end
    jobs_body[id] = body
  end
  return body
end

-- The job, when it is reserved by `owner`; nil otherwise (release, bury and
-- touch are for the reserving connection only).
local function load_reserved_by(id, owner)
  local j = load_job(id)
  if j and j[F_STATE] == RESERVED and j[F_OWNER] == owner then return j end
  return nil
end

-- Whether `owner` ("<sidecar>:<connection>") may take jobs now: not once its
-- sidecar's lease has lapsed, nor once the sidecar was reaped (forgetNode.lua
-- leaves a tombstone, a score below 0). A call of a sidecar may reach Redis
-- after that (held in the network, or in Redis' input while it was stopped):
-- what it took would be held by a sidecar the others no longer look after,
-- until its TTR. An owner of no registered sidecar (a store used alone) may.
-- (Looked up once a call per sidecar: a batch's owners share one.)
local leases -- this call's: sidecar -> whether its lease allows (begin_jobs)
local function lease_allows(owner, now)
  local node = owner:match('^(.*):') or ''
  local allowed = leases[node]
  if allowed == nil then
    local expiry = node ~= '' and redis.call('ZSCORE', K_NODES, node)
    allowed = not expiry or tonumber(expiry) > now
    leases[node] = allowed
  end
  return allowed
end

-- Reads the records of these ids in one HMGET (a batch knows most of the
-- jobs it will look at); load_job decodes them when asked.
local function prefetch_jobs(ids)
  local want = {}
  for _, id in ipairs(ids) do
    if jobs_meta[id] == nil and jobs_raw[id] == nil then
      jobs_raw[id] = false -- asked for (HMGET names an id once)
      want[#want + 1] = id
    end
  end
  for from = 1, #want, 500 do
    local upto = math.min(from + 499, #want)
    local raws = redis.call('HMGET', K_JOBS, unpack(want, from, upto))
    for k = from, upto do jobs_raw[want[k]] = raws[k - from + 1] or false end
  end
end

-- A job's metadata changed (its body never does).
local function save_job(id, j)
  jobs_meta[id] = j
  if not jobs_dirty[id] then
    jobs_dirty[id] = true
    jobs_to_write[#jobs_to_write + 1] = id
  end
end

-- A new job (a put): its record is not in Redis until write_back().
local function add_job(id, j, body)
  if #body >= BODY_APART then
    if bodies_apart == nil then bodies_apart = redis.call('HGET', K_STATS, 'record-format') == tostring(RECORD_FORMAT) end
    if bodies_apart then j[F_APART] = 1 end
  end
  jobs_unstored[id], jobs_body[id] = true, body
  save_job(id, j)
end

local function delete_job(T, id)
  local j = jobs_meta[id]
  if j and j[F_KEY] ~= 0 then forget_key_later(T.name, j[F_KEY]) end
  if j and j[F_EXPIRES] ~= 0 then redis.call('ZREM', tag_key('expiring'), member(id) .. T.name) end
  if not jobs_unstored[id] then
    jobs_to_delete[#jobs_to_delete + 1] = id
    if j and j[F_APART] == 1 then bodies_to_delete[#bodies_to_delete + 1] = id end
  end
  jobs_meta[id], jobs_body[id] = false, nil
end

-- The records saved and deleted since the last call, in chunks of at most
-- 500 records or ~1 MB (a call's arguments are copied: keep each bounded).
-- A body kept apart is written once, by its put, and deleted with its job.
local function write_jobs()
  local args, bodies, bytes = {}, {}, 0
  local function flush()
    if #args > 0 then redis.call('HSET', K_JOBS, unpack(args)) end
    if #bodies > 0 then redis.call('HSET', K_BODIES, unpack(bodies)) end
    args, bodies, bytes = {}, {}, 0
  end
  for _, id in ipairs(jobs_to_write) do
    local j = jobs_meta[id]
    if j then -- else deleted since
      local rec
      if j[F_APART] == 1 then
        rec = encode_job(j, '')
        if jobs_unstored[id] then
          bodies[#bodies + 1], bodies[#bodies + 2] = id, jobs_body[id]
          bytes = bytes + #jobs_body[id]
        end
      else
        rec = encode_job(j, job_body(id))
      end
      args[#args + 1], args[#args + 2] = id, rec
      bytes = bytes + #rec
      if #args >= 1000 or bytes >= 1048576 then flush() end
    end
  end
  flush()
  for from = 1, #jobs_to_delete, 500 do
    redis.call('HDEL', K_JOBS, unpack(jobs_to_delete, from, math.min(from + 499, #jobs_to_delete)))
  end
  for from = 1, #bodies_to_delete, 500 do
    redis.call('HDEL', K_BODIES, unpack(bodies_to_delete, from, math.min(from + 499, #bodies_to_delete)))
  end
  jobs_dirty, jobs_unstored, jobs_to_write, jobs_to_delete, bodies_to_delete = {}, {}, {}, {}, {}
end

-- The bodies kept apart of these jobs, in one HMGET.
local function prefetch_bodies(ids)
  local want = {}
  for _, id in ipairs(ids) do
    local j = load_job(id)
    if j and j[F_APART] == 1 and jobs_body[id] == nil then want[#want + 1] = id end
  end
  for from = 1, #want, 500 do
    local upto = math.min(from + 499, #want)
    local bodies = redis.call('HMGET', K_BODIES, unpack(want, from, upto))
    for k = from, upto do jobs_body[want[k]] = bodies[k - from + 1] or '' end
  end
end

-- Each sidecar's record format is kept in <tag>:node-formats (sidecar id ->
-- format; a sidecar of format 1 wrote none): heartbeat.lua records it,
-- forgetNode.lua removes it.
local function record_format_of(node)
  redis.call('HSET', tag_key('node-formats'), node, RECORD_FORMAT)
end

-- Raises the data set's record format to this library's once every live
-- sidecar reads it. Called by every beat until it is raised.
local function raise_format(now)
  if redis.call('HGET', K_STATS, 'record-format') == tostring(RECORD_FORMAT) then return end
  for _, node in ipairs(redis.call('ZRANGEBYSCORE', K_NODES, '(' .. now, '+inf')) do
    if tonumber(redis.call('HGET', tag_key('node-formats'), node) or '1') < RECORD_FORMAT then return end
  end
  redis.call('HSET', K_STATS, 'record-format', RECORD_FORMAT)
end

local function fmt_int(n)
  return string.format('%.0f', n)
end

-- The counts of all tubes' ready (and urgent) and buried jobs, and the set
-- of tubes with ready jobs, follow every ZADD and ZREM of a ready or buried
-- set (by what Redis says it changed). They are summed here and written once,
-- by write_back() at the end of every script that moves jobs.
local moved_ready, moved_urgent, moved_buried
-- Tubes whose ready set changed: true when only jobs came (it is not empty,
-- so no ZCARD is needed to know it belongs in ready-tubes), 'left' else.
local touched, touched_tube
-- Each tube's ready jobs gained less those taken, by name (see notify_net_ready).
local net_ready

local function count_ready(T, n, pri)
  moved_ready = moved_ready + n
  net_ready[T.name] = (net_ready[T.name] or 0) + n
  if pri <= URGENT then moved_urgent = moved_urgent + n end
  touched_tube[T.name] = T
  if n < 0 then touched[T.name] = 'left' elseif not touched[T.name] then touched[T.name] = true end
end

local function unready(T, m, pri)
  local removed = redis.call('ZREM', T.ready, m)
  if removed > 0 then count_ready(T, -removed, pri) end
end

-- Takes up to `count` most urgent members of T's ready set (lowest pri, then
-- lowest id): a flat list member, pri, member, pri, ...
local function pop_ready(T, count)
  local popped = redis.call('ZPOPMIN', T.ready, count)
  for k = 2, #popped, 2 do
    popped[k] = tonumber(popped[k])
    count_ready(T, -1, popped[k])
  end
  return popped
end

local function unbury(T, m)
  moved_buried = moved_buried - redis.call('ZREM', T.buried, m)
end

-- Reservations (the global reserved zset, and each tube's 'reserved' count)
-- are kept here and written by write_back(): one ZADD for all the jobs a
-- batch reserves, none for a job reserved and deleted in the same batch.
--   deadlines[m] = ms: member m must end with this deadline (a reserve or touch)
--   unreserved[m] = true: m must be gone
--   in_zset[m] = true: m is in the zset now (so a job that leaves its
--                reservation needs a ZREM)
-- A reservation made or touched here ends >= 1 s after `now` (TTR >= 1 s),
-- so a member of deadlines is never due, and one of unreserved no longer
-- counts: expire_reservations skips both.
local deadlines, unreserved, in_zset, reserved_moved

local function count_reserved(T, n)
  local r = reserved_moved[T.name]
  if r then r.n = r.n + n else reserved_moved[T.name] = { T = T, n = n } end
end

-- `was_reserved`: the job held a reservation already (a touch).
local function set_deadline(T, id, due, was_reserved)
  local m = member(id) .. T.name
  if deadlines[m] == nil and (was_reserved or unreserved[m]) then in_zset[m] = true end
  unreserved[m] = nil -- the ZADD replaces it
  deadlines[m] = due
end

local function write_reservations()
  local gone, added = {}, {}
  for m in pairs(unreserved) do gone[#gone + 1] = m end
  for from = 1, #gone, 500 do
    redis.call('ZREM', K_RESERVED, unpack(gone, from, math.min(from + 499, #gone)))
  end
  for m, due in pairs(deadlines) do
    added[#added + 1], added[#added + 2] = due, m
    if #added == 1000 then
      redis.call('ZADD', K_RESERVED, unpack(added))
      added = {}
    end
  end
  if #added > 0 then redis.call('ZADD', K_RESERVED, unpack(added)) end
  for _, r in pairs(reserved_moved) do
    if r.n ~= 0 then redis.call('HINCRBY', r.T.meta, 'reserved', r.n) end
  end
  deadlines, unreserved, in_zset, reserved_moved = {}, {}, {}, {}
end

-- The ZADDs of new jobs (puts, `later`) wait here, one list per zset, and go
-- out with write_queued_adds(): one ZADD per zset for a run of puts. A ready
-- set keeps its urgent and other jobs apart, so that the counts still follow
-- what ZADD says it added. A script that queues must write them before it
-- reads those zsets (batch.lua: before a reserve), and write_back() does.
local queued_adds, queued_order

local function write_queued_adds()
  for _, q in ipairs(queued_order) do
    for _, list in ipairs({ q.urgent, q.other }) do
      for from = 1, #list, 1000 do
        local added = redis.call('ZADD', q.key, unpack(list, from, math.min(from + 999, #list)))
        if q.T and added > 0 then count_ready(q.T, added, list[from]) end
      end
    end
  end
  queued_adds, queued_order = {}, {}
end

-- ZADD of a job's member, now or (later) queued; T: the tube whose ready set it is.
local function add_member(key, score, m, later, T)
  if not later then
    local added = redis.call('ZADD', key, score, m)
    if T and added > 0 then count_ready(T, added, score) end
    return
  end
  local q = queued_adds[key]
  if not q then
    q = { key = key, T = T, urgent = {}, other = {} }
    queued_adds[key] = q
    queued_order[#queued_order + 1] = q
  end
  local list = (T and score <= URGENT) and q.urgent or q.other
  list[#list + 1], list[#list + 2] = score, m
end

-- The state helpers below take T, a tube's keys with its name (tube_keys).
-- Moves a job (whatever it was) into its tube's ready set. A ready job's due
-- field holds when it became ready (0: when it was put, `fresh`), which a
-- reserve turns into the time it waited (waited_ms).
local function enter_ready(T, id, j, later, fresh)
  j[F_STATE] = READY
  j[F_DUE] = fresh and 0 or now_ms()
  j[F_OWNER] = ''
  add_member(T.ready, j[F_PRI], member(id), later, T)
end

-- Ms a ready job has waited since it became ready (or was put).
local function waited_ms(j, now)
  local since = j[F_DUE] > 0 and j[F_DUE] or j[F_CREATED]
  return math.max(0, math.floor(now - since))
end

local function enter_delayed(T, id, j, due, later)
  j[F_STATE] = DELAYED
  j[F_DUE] = due
  j[F_OWNER] = ''
  local m = member(id)
  add_member(T.delayed, j[F_DUE], m, later)
  add_member(K_DELAYED, j[F_DUE], m .. T.name, later)
end

-- Slots freed under max-reserved (a job of a tube with one left its
-- reservation): tube name -> { T = tube, n = slots }.
local freed

local function leave_reserved(T, id, j)
  if j[F_LIMITED] == 1 then
    j[F_LIMITED] = 0
    freed = freed or {}
    local f = freed[T.name]
    if f then f.n = f.n + 1 else freed[T.name] = { T = T, n = 1 } end
  end
  local m = member(id) .. T.name
  -- A reservation made in this script is not in the zset: nothing to remove.
  if in_zset[m] or not deadlines[m] then unreserved[m] = true end
  deadlines[m], in_zset[m] = nil, nil
  count_reserved(T, -1)
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
  else leave_reserved(T, id, j) end
end

local function enter_reserved(T, id, j, now, owner)
  if j[F_EXPIRES] ~= 0 then -- reserved in time: it never expires now
    redis.call('ZREM', tag_key('expiring'), member(id) .. T.name)
    j[F_EXPIRES] = 0
  end
  j[F_STATE] = RESERVED
  j[F_OWNER] = owner
  j[F_DUE] = now + j[F_TTR] * 1000
  j[F_RESERVES] = j[F_RESERVES] + 1
  set_deadline(T, id, j[F_DUE], false)
  count_reserved(T, 1)
end

local function enter_buried(T, id, j)
  j[F_STATE] = BURIED
  j[F_DUE] = 0
  j[F_OWNER] = ''
  -- Buried jobs are a FIFO: score by a per-tube counter.
  moved_buried = moved_buried + redis.call('ZADD', T.buried, redis.call('HINCRBY', T.meta, 'bury-seq', 1), member(id))
end

-- Writes what the script kept back: job records, reservations, counts. Every
-- script that moves or saves jobs calls it at its end.
local function write_back()
  write_queued_adds()
  write_jobs()
  write_reservations()
  if moved_ready ~= 0 then redis.call('HINCRBY', K_STATS, 'jobs-ready', moved_ready) end
  if moved_urgent ~= 0 then redis.call('HINCRBY', K_STATS, 'jobs-urgent', moved_urgent) end
  if moved_buried ~= 0 then redis.call('HINCRBY', K_STATS, 'jobs-buried', moved_buried) end
  for name, how in pairs(touched) do
    if how == true or redis.call('ZCARD', touched_tube[name].ready) > 0 then
      redis.call('SADD', K_READY, name)
    else
      redis.call('SREM', K_READY, name)
    end
  end
  moved_ready, moved_urgent, moved_buried, touched, touched_tube = 0, 0, 0, {}, {}
end

-- Wakes blocked reserves on every sidecar: "<count> <tube>". The loader
-- makes this SPUBLISH on a Redis Cluster (sharded pub/sub: the channel
-- shares the shard's hash tag, so a wake-up stays on the shard's node).
local PUBLISH = 'PUBLISH'
local function notify_ready(channel, tube, count)
  if count > 0 then redis.call(PUBLISH, channel, count .. ' ' .. tube) end
end

-- Wakes waiters for the jobs a script left ready in each tube, net of those it
-- took: a put handed to a reserve in the same call (a consumer of the same
-- sidecar) wakes nobody. A job taken in place of one that became ready here
-- was ready before, so its own wake-up is still on its way.
local function notify_net_ready(channel)
  for name, n in pairs(net_ready) do notify_ready(channel, name, n) end
  -- A slot freed under max-reserved lets a waiter take a job that was ready before.
  for name, f in pairs(freed or {}) do
    if (net_ready[name] or 0) <= 0 then notify_ready(channel, name, math.min(f.n, redis.call('ZCARD', f.T.ready))) end
  end
  net_ready, freed = {}, nil
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
-- (References first: a tube whose job was just deleted is usually one that
-- a live connection watches, and that takes two calls to see.)
local function collect_tube(T, now)
  if T.name == 'default' then return false end
  local refs = redis.call('HGETALL', T.refs)
  for i = 1, #refs, 2 do
    if tonumber(refs[i + 1]) > 0 then
      local expiry = redis.call('ZSCORE', K_NODES, refs[i])
      if expiry and tonumber(expiry) > now then return false end
    end
  end
  if redis.call('ZCARD', T.ready) + redis.call('ZCARD', T.delayed) + redis.call('ZCARD', T.buried) > 0 then return false end
  local meta = redis.call('HMGET', T.meta, 'reserved', 'num')
  if tonumber(meta[1] or '0') > 0 then return false end
  redis.call('DEL', T.meta, T.refs, T.meta .. ':spent') -- and its reserve-rate's last second (includes/limits.lua)
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
  local settings = redis.call('HGET', tag_key('tube-settings'), T.name)
  if settings then redis.call('HSET', T.meta, 'settings', settings) end
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
  return { id, tube_name(j), j[F_STATE], fmt_int(j[F_PRI]), fmt_int(math.max(0, math.floor(now - j[F_CREATED]))), fmt_int(j[F_DELAY]), fmt_int(j[F_TTR]),
           fmt_int(time_left), j[F_RESERVES], j[F_TIMEOUTS], j[F_RELEASES], j[F_BURIES], j[F_KICKS] }
end

-- A delayed job of tube T (its tube-delayed member m) becomes ready; false when it is gone.
local function promote(T, m)
  local id = member_id(m)
  local j = load_job(id)
  if not j then return false end
  leave_delayed(T, id)
  enter_ready(T, id, j)
  save_job(id, j)
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
-- A member this script has reserved, touched or released since it read the
-- zset is not due (see `deadlines`).
local function expire_reservations(by_name, now, limit, moved)
  local due = redis.call('ZRANGEBYSCORE', K_RESERVED, '-inf', now, 'LIMIT', 0, limit)
  for _, m in ipairs(due) do
    local T = by_name[member_tube(m)]
    if T and not deadlines[m] and not unreserved[m] then
      local id = member_id(m)
      local j = load_job(id)
      if not j or j[F_STATE] ~= RESERVED then
        redis.call('ZREM', K_RESERVED, m) -- stale member of a job that is gone
      else
        leave_reserved(T, id, j)
        j[F_TIMEOUTS] = j[F_TIMEOUTS] + 1
        redis.call('HINCRBY', K_STATS, 'job-timeouts', 1)
        enter_ready(T, id, j)
        save_job(id, j)
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

-- Module-level locals outlive a call in a function library: everything above
-- that a call sets or changes is set afresh here, and the entry the loader
-- writes for each function calls this first, so that no call sees what another
-- left (the loader refuses a library whose helpers change a module-level local
-- that their file's begin_<name> does not set).
local function begin_jobs()
  K_JOBS, K_TUBE_NAMES, K_DELAYED, K_RESERVED, K_STATS, K_TUBES, K_NODES, K_SEQ, K_READY, K_BODIES =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
  jobs_meta, jobs_body, jobs_raw, jobs_dirty, jobs_unstored, jobs_inline, jobs_inline_at = {}, {}, {}, {}, {}, {}, {}
  jobs_to_write, jobs_to_delete, bodies_to_delete, bodies_apart = {}, {}, {}, nil
  moved_ready, moved_urgent, moved_buried = 0, 0, 0
  touched, touched_tube, net_ready, freed = {}, {}, {}, nil
  deadlines, unreserved, in_zset, reserved_moved = {}, {}, {}, {}
  queued_adds, queued_order = {}, {}
  leases = {}
end
