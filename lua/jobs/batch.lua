#!lua
--[[
  Applies a batch of job commands from any connections, in order, in one
  call: the sidecar sends what arrived while the previous call was in flight
  (src/store/batcher.ts), so batches form by themselves under load and a
  lone command goes out at once.
  KEYS  10 globals, then 5 per tube (includes/jobs.lua)
  ARGV  [1] events channel  [2] shard count  [3] this shard  [4] tube count n
        [5..4+n] tube names (KEYS order), then the ops, each a code and its
        fields (t = 1-based tube index):
          'p' t pri delay run ttr body  put                    -> id
                                      (run: ms of the delay already gone by,
                                      since the command arrived at the sidecar)
          'q' t pri delay run ttr key expire bury body
                                      put-with                 -> id | {id}
                                      (key '-': none; expire s, 0: never; bury
                                      1: bury on expiry; {id}: DUPLICATE, the
                                      job of that key, nothing stored)
          'i'                         use up a job id          -> id
                                      (a put that ends in EXPECTED_CRLF or
                                      DRAINING, as beanstalkd)
          'd' owner id t              delete                   -> 1 | 0
          'r' owner id t pri delay run  release                -> 1 | 0
          'b' owner id t pri          bury                     -> 1 | 0
          't' owner id t              touch                    -> ttr s | 0
          'v' owner n k t1..tk        reserve up to n jobs     -> {id, ttr s, body, tube, waited ms, ...,
                                      from k tubes               drained} (5 values a job,
                                                                 1..n jobs; drained 1 | 0)
                                      | ms until something may become reservable, or -1
                                      n < 0: reserve nothing,  -> {pri, created ms.us, ...} | ms, -1
                                      name the -n jobs a        (2 values a job)
                                      reserve would take
          'w' owner n names           the same from the tubes named (one argument, names
                                      apart by spaces), not passed in KEYS (see reserve below)
          's' owner n ver k t1..tk    the same from the k tubes named, which become owner's
                                      stored watch list (version ver) in this shard
          'k' owner n ver             the same from owner's stored watch list, which must be
                                      at version ver, else -> -2 (send it: 's')
          'x' owner                   owner's stored watch list goes -> 1
                                      (its connection closed)
        A reserve ('v', 'w', 's', 'k') of an owner whose sidecar has no lease
        takes nothing and stores nothing -> -3 (includes/jobs.lua lease_allows).
  Delete, release, bury and touch act only on a job that is not reserved, or
  reserved by `owner` (delete), or reserved by `owner` (the others). Reserve
  takes the most urgent ready jobs (lowest pri, then lowest id) of the tubes
  that are not paused, after moving their due delayed jobs and expired
  reservations to ready (once per batch).
  Returns one result per op, in order.
  Cost: writes are kept back within the call and made in bulk, so a command
  costs little more than its share of a few multi-member commands: one
  INCRBY for all the ids of the call; one HMGET for the jobs that deletes,
  releases, buries and touches name; puts' ZADDs queued until a reserve (or a
  delete of such a job) reads those zsets, then one ZADD per zset; a reserve
  over one tube pops with ZPOPMIN, and the lone reserves of a tube (one job
  each, one per connection) pop together (lone_reserve); a put handed to the
  reserve right after it (a sidecar's waiting consumer) skips the ready set
  when that reserve takes it (put_handed_over); job records,
  reservations and each tube's reserved count written once at the end
  (includes/jobs.lua write_back).
  Also registered as batchAllowOom (flags=allow-oom): Redis out of memory
  refuses this script, but the sidecar then sends the ops that do not grow
  memory (all but puts) through that one, so workers can drain a full Redis.
  And as batchSections: the batches of several shards of one Redis node in
  one call, each run as a call of its own (src/store/redis/scripts.ts).
]]
--- @variant allow-oom
--- @variant sections
--- @include "jobs"
--- @include "limits"

-- The helpers below are made once, when the library loads; the state of the
-- call they work on is set afresh by begin_batch (at the end of them), and the
-- call itself follows `--- @call`.
-- The call's time (created: of the jobs it puts; now: in whole ms), the shard
-- count and this shard (job ids), its tubes (ARGV[5..4+n], in KEYS order).
local created, now, shards, shard, Ts, by_name
-- Per tube index: jobs put, jobs deleted, whether a job left it.
local inserted, deleted, emptied

-- The fields after each op's code ('v': 3, then its k tubes).
local OP_FIELDS = { p = 6, q = 9, i = 0, d = 3, r = 6, b = 4, t = 3, v = 3, w = 3, s = 4, k = 3, x = 1 }
local function op_length(a)
  local op = ARGV[a]
  local n = OP_FIELDS[op]
  if op == 'v' then n = n + tonumber(ARGV[a + 3])
  elseif op == 's' then n = n + tonumber(ARGV[a + 4]) end
  return n and n + 1
end
local RESERVES = { v = true, w = true, s = true, k = true }

-- A job id tells its shard: id = seq * shards + shard (1, 2, 3, ... with one
-- shard). The batch's seqs are consecutive, handed out in op order, after
-- last_seq (one INCRBY takes them all, in the call below).
local last_seq
local function next_id()
  last_seq = last_seq + 1
  return fmt_int(last_seq * shards + shard)
end

-- A job put or released with a delay waits until the delay has run from the
-- command's arrival (`run` ms of it went by before this call); without one, or
-- once it has run, it is ready (and wakes a waiter, unless a reserve of this
-- call takes it: notify_net_ready). A put's ZADDs wait for the next reserve or
-- the end (later).
local function wait_or_ready(ti, id, j, delay, run, later, fresh)
  if delay * 1000 > run then
    enter_delayed(Ts[ti], id, j, now + delay * 1000 - run, later)
  else
    enter_ready(Ts[ti], id, j, later, fresh)
  end
end

-- Jobs put by this call whose zset members may still be queued.
local put_here

-- A new job of tube ti, put-with's fields a key ('-': none), expiry s (0:
-- never) and what it does (bury 1): its id and metadata, not in a state yet.
-- A put-with of a key the tube holds stores nothing: {id of its job} (DUPLICATE).
local function new_job(ti, pri, delay, ttr, body, key, expire, bury)
  local T = Ts[ti]
  T.num = T.num or ensure_tube(T)
  local id = next_id()
  local keyed = key and key ~= '-'
  if keyed then
    local first = claim_key(T.name, key, id)
    if first then
      last_seq = last_seq - 1 -- the id goes back: nothing took one since
      redis.call('HINCRBY', T.meta, 'duplicate-puts', 1)
      return { first }
    end
  end
  local j = { pri, delay, ttr, READY, created, 0, '', T.num, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }
  if keyed then j[F_KEY] = key end
  if expire and expire > 0 then
    j[F_EXPIRES], j[F_EXPIRY_BURY] = now + expire * 1000, bury
    redis.call('ZADD', tag_key('expiring'), j[F_EXPIRES], member(id) .. T.name)
  end
  add_job(id, j, body)
  inserted[ti] = inserted[ti] + 1
  return id, j
end

local function put(ti, pri, delay, run, ttr, body, key, expire, bury)
  local id, j = new_job(ti, pri, delay, ttr, body, key, expire, bury)
  if not j then return id end
  wait_or_ready(ti, id, j, delay, run, true, true)
  put_here[id] = true
  return id
end

local function delete(owner, id, ti)
  local j = load_job(id)
  if not j or (j[F_STATE] == RESERVED and j[F_OWNER] ~= owner) then return 0 end
  leave_state(Ts[ti], id, j)
  delete_job(Ts[ti], id)
  deleted[ti] = deleted[ti] + 1
  emptied[ti] = true
  return 1
end

local function release(owner, id, ti, pri, delay, run)
  local j = load_reserved_by(id, owner)
  if not j then return 0 end
  local T = Ts[ti]
  leave_reserved(T, id, j)
  j[F_PRI] = pri
  j[F_DELAY] = delay
  j[F_RELEASES] = j[F_RELEASES] + 1
  wait_or_ready(ti, id, j, delay, run)
  save_job(id, j)
  return 1
end

local function bury(owner, id, ti, pri)
  local j = load_reserved_by(id, owner)
  if not j then return 0 end
  local T = Ts[ti]
  leave_reserved(T, id, j)
  j[F_PRI] = pri
  j[F_BURIES] = j[F_BURIES] + 1
  enter_buried(T, id, j)
  save_job(id, j)
  return 1
end

local function touch(owner, id, ti)
  local j = load_reserved_by(id, owner)
  if not j then return 0 end
  j[F_DUE] = now + j[F_TTR] * 1000
  set_deadline(Ts[ti], id, j[F_DUE], true)
  save_job(id, j)
  return j[F_TTR]
end

-- Reserve 'v' names its tubes by index: every one has its keys in KEYS, and
-- the reserve looks at each. Reserves 'w', 's' and 'k' (a connection watching
-- more tubes than the sidecar sends keys for: thousands) take a watch list
-- (below): they look only at its tubes with ready jobs (ready-tubes), find due
-- delayed jobs in the global delayed zset, and derive the keys of the few
-- they touch (tube_named): their cost follows the tubes that have jobs, not
-- those watched. 'w' names the tubes in ARGV on every call; 's' stores them
-- as the connection's watch list (a set under the shard's hash tag, with its
-- version as the member '#<ver>': no tube name starts with '#'), which 'k'
-- then uses without sending it again. A sidecar deletes a connection's list
-- when it closes; forgetNode.lua deletes a departed sidecar's lists (each
-- sidecar's are indexed in watch_index).

-- A watch list: has(name), and ready(): its tubes in ready-tubes.
local function names_watch(list)
  return {
    has = function(name) return list[name] == true end,
    ready = function()
      local out = {}
      for _, name in ipairs(redis.call('SMEMBERS', K_READY)) do
        if list[name] then out[#out + 1] = name end
      end
      return out
    end,
  }
end

local function watch_key(owner)
  return TAG .. ':watch:' .. owner
end

-- The index of a sidecar's stored watch lists: the owner is "<node>:<connection>".
local function watch_index(owner)
  return TAG .. ':watch-lists:' .. (string.match(owner, '^([^:]*):') or owner)
end

local function stored_watch(key)
  local known = {}
  return {
    has = function(name)
      local w = known[name]
      if w == nil then
        w = redis.call('SISMEMBER', key, name) == 1
        known[name] = w
      end
      return w
    end,
    -- SINTER walks the smaller set and looks each member up in the other.
    ready = function() return redis.call('SINTER', K_READY, key) end,
  }
end

-- 's': ARGV[from..from+k-1] become owner's watch list at version ver.
local function store_watch(owner, ver, from, k)
  local key = watch_key(owner)
  redis.call('DEL', key)
  redis.call('SADD', key, '#' .. ver)
  for i = from, from + k - 1, 1000 do
    redis.call('SADD', key, unpack(ARGV, i, math.min(i + 999, from + k - 1)))
  end
  redis.call('SADD', watch_index(owner), owner)
  return stored_watch(key)
end

-- 'k': owner's stored watch list, or nil when it is not at version ver (lost, or never stored).
local function current_watch(owner, ver)
  local key = watch_key(owner)
  if redis.call('SISMEMBER', key, '#' .. ver) == 0 then return nil end
  return stored_watch(key)
end

-- Housekeeping for reserves, once per batch (and once per tube looked at).
local expired, promoted_all, promoted, named

-- A tube's keys: from this call's KEYS, or derived from its name.
local function tube_for(name)
  local T = by_name[name] or named[name]
  if not T then
    T = tube_named(name)
    named[name] = T
  end
  return T
end

local function tidy(tubes, watched)
  if not expired then
    expire_reservations(by_name, now, 100, {})
    expired = true
  end
  if not watched then
    for _, T in ipairs(tubes) do
      if not promoted[T.name] then
        promote_delayed(T, now, 1000)
        promoted[T.name] = true
      end
    end
  elseif not promoted_all then
    -- Every due delayed job of the shard (the promotion timer would move them
    -- anyway), so that a later reserve of this call over another watch list
    -- finds its own. Global members end with the tube's name; member_id reads
    -- only the id before it.
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'LIMIT', 0, 1000)) do
      promote(tube_for(member_tube(m)), m)
    end
    promoted_all = true
  end
end

-- The watched tubes with ready jobs: ready-tubes, and the tubes this call has
-- moved jobs of (written to ready-tubes at its end).
local function with_ready_jobs(watched)
  local look, seen = {}, {}
  for _, name in ipairs(watched.ready()) do
    seen[name] = true
    look[#look + 1] = tube_for(name)
  end
  for name in pairs(touched) do
    if not seen[name] and watched.has(name) then
      seen[name] = true
      look[#look + 1] = tube_for(name)
    end
  end
  return look
end

-- Nothing now: in how many ms may something become reservable (a delay, a
-- pause or a limit ending), or -1.
local function wake_after(tubes, look, watched)
  local wake = -1
  local function wake_at(t)
    if wake < 0 or t < wake then wake = t end
  end
  for _, T in ipairs(look) do
    if slots(T, now) == 0 and redis.call('ZCARD', T.ready) > 0 then
      local at = reopens_at(T, now)
      if at then wake_at(at) end
    end
  end
  if not watched then
    for _, T in ipairs(tubes) do
      local soonest = redis.call('ZRANGE', T.delayed, 0, 0, 'WITHSCORES')
      if soonest[1] then wake_at(tonumber(soonest[2])) end
    end
  else
    -- The soonest delayed job of a watched tube, among the first 200 of all;
    -- if none is there, look again when the 200th is due.
    local soonest = redis.call('ZRANGE', K_DELAYED, 0, 199, 'WITHSCORES')
    for k = 1, #soonest, 2 do
      if watched.has(member_tube(soonest[k])) then
        wake_at(tonumber(soonest[k + 1]))
        break
      end
      if k == 399 then wake_at(tonumber(soonest[k + 1])) end
    end
  end
  if wake < 0 then return -1 end
  return wake - now
end

-- The most urgent ready job of the tubes in `look` that may hand one out
-- (not paused, not at a limit): its tube, priority and member, or nil.
local function most_urgent(look)
  local best, best_pri, best_member
  for _, T in ipairs(look) do
    if slots(T, now) > 0 then
      local top = redis.call('ZRANGE', T.ready, 0, 0, 'WITHSCORES')
      if top[1] then
        local pri = tonumber(top[2])
        if not best or pri < best_pri or (pri == best_pri and top[1] < best_member) then
          best, best_pri, best_member = T, pri, top[1]
        end
      end
    end
  end
  return best, best_pri, best_member
end

-- The k jobs a reserve of k would take, without taking them: {pri, created
-- ms, ...} in reserve order, or nil. (A connection watching tubes of several
-- shards asks each shard, then reserves where the most urgent are:
-- src/server/waiters.ts.)
local function candidates(look, k)
  local found = {}
  for _, T in ipairs(look) do
    local room = math.min(k, slots(T, now))
    if room > 0 then
      local top = redis.call('ZRANGE', T.ready, 0, room - 1, 'WITHSCORES')
      for i = 1, #top, 2 do found[#found + 1] = { tonumber(top[i + 1]), top[i] } end
    end
  end
  table.sort(found, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  local out = {}
  for _, c in ipairs(found) do
    if #out == 2 * k then break end
    local j = load_job(member_id(c[2]))
    if j then -- else a stale member of a job that is gone (a reserve removes it)
      out[#out + 1], out[#out + 2] = fmt_int(c[1]), string.format('%.3f', j[F_CREATED])
    end
  end
  if #out == 0 then return nil end
  return out
end

-- Takes up to `count` of the most urgent ready jobs of the tubes in `look`
-- that may hand them out (not paused, within their limits) out of their ready
-- sets: {T, member, ...}. One tube: one ZPOPMIN; several: the best of their tops.
local function take_ready(look, count)
  if #look == 1 then
    local T = look[1]
    local room = slots(T, now)
    if room == 0 then return {} end
    local popped, out = pop_ready(T, math.min(count, room)), {}
    for k = 1, #popped, 2 do out[#out + 1], out[#out + 2] = T, popped[k] end
    return out
  end
  local T, pri, m = most_urgent(look)
  if not T then return {} end
  unready(T, m, pri)
  return { T, m }
end

-- A reserve's jobs end with whether its tubes are drained: 1 when they hold
-- no job a reserve could take, now or once a delay ends, at the END of the
-- call (whatever its later ops did), else 0 (or not known: a watch list's).
-- A sidecar lets the next reserve over drained tubes wait without a look,
-- until a wake-up comes (src/server/waiters.ts): at light load, where a call
-- carries a few puts handed to reserves, each of those renews the mark. The
-- results to tell are kept in `tellers` (result, its tubes, ...) and told by
-- tell_drained, two ZCARDs a tube a call.
local tellers
local function tell_later(result, tubes)
  tellers[#tellers + 1], tellers[#tellers + 2] = result, tubes
end

local function tell_drained()
  local drained = {}
  for k = 1, #tellers, 2 do
    local result, all = tellers[k], true
    for _, T in ipairs(tellers[k + 1]) do
      local d = drained[T]
      if d == nil then
        d = redis.call('ZCARD', T.ready) == 0 and redis.call('ZCARD', T.delayed) == 0
        drained[T] = d
      end
      if not d then all = false; break end
    end
    if all then result[#result] = 1 end
  end
end

-- Job id of tube T (its metadata j) goes to `owner`: reserved, counted for
-- the tube's limits, and its 5 values appended to `taken` (id, ttr s, body,
-- tube, ms it waited ready).
local function hand_out(T, id, j, owner, taken)
  local waited = waited_ms(j, now)
  enter_reserved(T, id, j, now, owner)
  take_slot(T, id, j, now)
  save_job(id, j)
  local t = #taken
  taken[t + 1], taken[t + 2], taken[t + 3], taken[t + 4], taken[t + 5] = id, j[F_TTR], job_body(id), T.name, waited
end

-- Up to n jobs, most urgent first, from `tubes` (given by keys), or from the
-- tubes of `watched` (a watch list, above) that have ready jobs; n < 0 takes
-- none and names the -n candidates instead. The jobs are followed by whether
-- that drained the tubes (0 until the call's end: `tell` asks for it then, see
-- tell_later). `owner` may be a list: the k-th job goes to its k-th owner
-- (lone reserves served together, below).
local function reserve(owner, n, tubes, watched, tell)
  tidy(tubes, watched)
  local look = watched and with_ready_jobs(watched) or tubes
  if n < 0 then return candidates(look, -n) or wake_after(tubes, look, watched) end
  local taken = {}
  local short = false -- one tube gave fewer than asked: it has no more
  while #taken < 5 * n and not short do
    local want = n - #taken / 5
    local got = take_ready(look, want)
    if #got == 0 then break end
    short = #look == 1 and #got < 2 * want
    if #got > 2 then
      local ids = {}
      for k = 2, #got, 2 do ids[#ids + 1] = member_id(got[k]) end
      prefetch_jobs(ids)
      prefetch_bodies(ids)
    end
    for k = 1, #got, 2 do
      local T, id = got[k], member_id(got[k + 1])
      local j = load_job(id)
      if j then -- else a stale member of a job that is gone: look again
        hand_out(T, id, j, type(owner) == 'table' and owner[#taken / 5 + 1] or owner, taken)
      end
    end
  end
  if #taken > 0 then
    taken[#taken + 1] = 0
    if tell then tell_later(taken, tubes) end
    return taken
  end
  return wake_after(tubes, look, watched)
end

-- Lone reserves: reserves of one job from one tube ('v' owner 1 1 t), one per
-- connection, as busy consumers send them. Those of a tube wait (its tidy done
-- in place) and are served together: one ZPOPMIN and one HMGET for all, the
-- jobs handed out in op order, as one reserve of n takes them. They are
-- served at the last of them, or before an op that could tell the difference
-- (settle_lone), so every op sees what it would have seen in order: the ops
-- let past them are those that cannot touch a ready job of their tube. A tube
-- with a limit serves each at once (its slots count every op).
-- lone[t] = { last = ARGV index of its last lone reserve, count, tubes = { its tube's keys },
--            waiting = { {owner, at, a}, ... } }
-- lone_waiting: how many wait.
local lone, lone_waiting

local function is_lone(a)
  return ARGV[a] == 'v' and ARGV[a + 2] == '1' and ARGV[a + 3] == '1'
end

-- Serves tube t's waiting lone reserves, putting each result in results[at].
local function serve_lone(t, results)
  local w = lone[t].waiting
  if #w == 0 then return end
  lone[t].waiting, lone_waiting = {}, lone_waiting - #w
  local owners, tubes = {}, lone[t].tubes
  for i, x in ipairs(w) do owners[i] = x.owner end
  local taken = reserve(owners, #owners, tubes, nil, false)
  local got, wake = 0, nil
  if type(taken) == 'number' then wake = taken else got = (#taken - 1) / 5 end
  for i, x in ipairs(w) do
    if i <= got then
      local b = 5 * (i - 1)
      results[x.at] = { taken[b + 1], taken[b + 2], taken[b + 3], taken[b + 4], taken[b + 5], 0 }
      tell_later(results[x.at], tubes)
    else
      wake = wake or wake_after(tubes, tubes, nil)
      results[x.at] = wake
    end
  end
end

local function serve_all_lone(results)
  for t in pairs(lone) do serve_lone(t, results) end
end

-- Before op ARGV[a] runs: serves the waiting lone reserves it could tell
-- from served ones (a put or release into their tube, a delete, bury or
-- touch of a ready job, another kind of reserve).
local function settle_lone(a, results)
  local op = ARGV[a]
  if op == 'p' or op == 'q' then
    if lone[ARGV[a + 1]] then serve_lone(ARGV[a + 1], results) end
  elseif op == 'd' or op == 'b' or op == 't' then
    local j = load_job(ARGV[a + 2])
    if j and j[F_STATE] == READY then serve_all_lone(results) end
  elseif op ~= 'i' and op ~= 'x' then
    serve_all_lone(results)
  end
end

-- The lone reserve at ARGV[a], its result due in results[at]: false while it
-- waits (filled in when served).
local function lone_reserve(a, at, results)
  local t = ARGV[a + 4]
  local g = lone[t]
  local allowed = lease_allows(ARGV[a + 1], now)
  if allowed then
    tidy(g.tubes)
    local w = g.waiting
    w[#w + 1] = { owner = ARGV[a + 1], at = at, a = a }
    lone_waiting = lone_waiting + 1
  end
  local s = gate(g.tubes[1]).s
  if a == g.last or s.max > 0 or s.rate > 0 then serve_lone(t, results) end
  if not allowed then return -3 end
  return results[at] or false
end

-- The put at ARGV[a], followed by a reserve of one job from its tube alone
-- ('v' owner 1 1 t; the call's first look finds these pairs): how this
-- sidecar hands a put to a consumer waiting on the tube
-- (src/server/waiters.ts). When the new job is what that reserve takes (ready
-- at once, the tube may hand out a job, nothing as urgent is ready there), it
-- goes straight to reserved: no ZADD into the ready set and ZPOPMIN out of it,
-- no wait among the lone reserves. Returns the put's and the reserve's
-- results, or nil: then each runs as an op of its own.
local function put_handed_over(a)
  local b = a + op_length(a)
  local ti, pri, delay, run = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local owner, T = ARGV[b + 1], Ts[ti]
  if delay * 1000 > run or not lease_allows(owner, now) then return nil end
  local tubes = { T }
  write_queued_adds()
  tidy(tubes)
  if slots(T, now) == 0 then return nil end
  -- Any job ready there was put before this one: it goes first at the same priority.
  local top = redis.call('ZRANGE', T.ready, 0, 0, 'WITHSCORES')
  if top[1] and tonumber(top[2]) <= pri then return nil end
  local id, j = new_job(ti, pri, delay, tonumber(ARGV[a + 5]), ARGV[a + 6])
  local taken = {}
  hand_out(T, id, j, owner, taken)
  taken[6] = 0 -- drained: told at the call's end
  tell_later(taken, tubes)
  return id, taken
end

-- This call's state (see the top); the entry calls it after begin_jobs.
local function begin_batch()
  created = now_ms_exact()
  now = math.floor(created)
  shards, shard = tonumber(ARGV[2]), tonumber(ARGV[3])
  Ts, by_name = tubes_from(5, tonumber(ARGV[4]))
  inserted, deleted, emptied = {}, {}, {}
  for i = 1, #Ts do inserted[i], deleted[i] = 0, 0 end
  last_seq = 0
  put_here = {}
  expired, promoted_all, promoted, named = false, false, {}, {}
  lone, tellers, lone_waiting = {}, {}, 0
end

--- @call
local FIRST_OP = 5 + #Ts

-- A first look at the ops: how many ids they take (one INCRBY for all), the
-- jobs that delete, release, bury and touch name (one HMGET for all), and the
-- puts followed by a lone reserve of their tube (handed[a]: put_handed_over).
local ids_wanted, ids_named, handed = 0, {}, {}
do
  local a, put_at = FIRST_OP, nil
  while a <= #ARGV do
    local op, len = ARGV[a], op_length(a)
    if not len then return redis.error_reply('ERR batch: unknown op ' .. tostring(op)) end
    if op == 'p' or op == 'q' or op == 'i' then
      ids_wanted = ids_wanted + 1
    elseif RESERVES[op] then
      if is_lone(a) then
        local g = lone[ARGV[a + 4]]
        if g then g.last, g.count = a, g.count + 1
        else lone[ARGV[a + 4]] = { last = a, count = 1, tubes = { Ts[tonumber(ARGV[a + 4])] }, waiting = {} } end
        if put_at and ARGV[put_at + 1] == ARGV[a + 4] then handed[put_at] = true end
      end
    elseif op ~= 'x' then
      ids_named[#ids_named + 1] = ARGV[a + 2]
    end
    put_at = op == 'p' and a or nil
    a = a + len
  end
end
prefetch_jobs(ids_named)
local ids_end = 0
if ids_wanted > 0 then
  ids_end = redis.call('INCRBY', K_SEQ, ids_wanted)
  last_seq = ids_end - ids_wanted
end

local results, at = {}, 0
local a = FIRST_OP
while a <= #ARGV do
  local op = ARGV[a]
  local r
  at = at + 1
  -- Queued ZADDs of puts go out before anything reads those zsets: a reserve,
  -- or a delete of a job put here.
  if RESERVES[op] or (op == 'd' and put_here[ARGV[a + 2]]) then write_queued_adds() end
  local is_lone_reserve = is_lone(a) and lone[ARGV[a + 4]].count > 1
  if lone_waiting > 0 and not is_lone_reserve then settle_lone(a, results) end
  if is_lone_reserve then
    r = lone_reserve(a, at, results)
  elseif RESERVES[op] and not lease_allows(ARGV[a + 1], now) then
    r = -3
  elseif op == 'p' then
    local id, taken
    if handed[a] then id, taken = put_handed_over(a) end
    if id then -- the reserve after it is answered too: its result goes in its own place
      results[at], r = id, taken
      a, at = a + op_length(a), at + 1
    else
      r = put(tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), ARGV[a + 6])
    end
  elseif op == 'q' then
    r = put(tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]),
      ARGV[a + 9], ARGV[a + 6], tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8]))
  elseif op == 'i' then
    r = next_id()
  elseif op == 'd' then
    r = delete(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]))
  elseif op == 'r' then
    r = release(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]))
  elseif op == 'b' then
    r = bury(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]))
  elseif op == 't' then
    r = touch(ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]))
  elseif op == 'v' then
    local k, tubes = tonumber(ARGV[a + 3]), {}
    for i = 1, k do tubes[i] = Ts[tonumber(ARGV[a + 3 + i])] end
    r = reserve(ARGV[a + 1], tonumber(ARGV[a + 2]), tubes, nil, true)
  elseif op == 'w' then
    local list = {}
    for name in string.gmatch(ARGV[a + 3], '%S+') do list[name] = true end
    r = reserve(ARGV[a + 1], tonumber(ARGV[a + 2]), {}, names_watch(list), false)
  elseif op == 's' then
    local watched = store_watch(ARGV[a + 1], ARGV[a + 3], a + 5, tonumber(ARGV[a + 4]))
    r = reserve(ARGV[a + 1], tonumber(ARGV[a + 2]), {}, watched, false)
  elseif op == 'k' then
    local watched = current_watch(ARGV[a + 1], ARGV[a + 3])
    r = watched and reserve(ARGV[a + 1], tonumber(ARGV[a + 2]), {}, watched, false) or -2
  elseif op == 'x' then
    redis.call('DEL', watch_key(ARGV[a + 1]))
    redis.call('SREM', watch_index(ARGV[a + 1]), ARGV[a + 1])
    r = 1
  else
    return redis.error_reply('ERR batch: unknown op ' .. tostring(op))
  end
  results[at] = r
  a = a + op_length(a)
end

-- A put-with answered DUPLICATE took no id: hand the sequence's last ones back, so ids stay consecutive.
if last_seq < ids_end then redis.call('DECRBY', K_SEQ, ids_end - last_seq) end
-- The records, reservations and counts kept back, before collect_tube reads them.
write_back()
tell_drained()
local total = 0
for i, T in ipairs(Ts) do
  if inserted[i] > 0 then redis.call('HINCRBY', T.meta, 'total-jobs', inserted[i]) end
  if deleted[i] > 0 then redis.call('HINCRBY', T.meta, 'cmd-delete', deleted[i]) end
  if emptied[i] then collect_tube(T, now) end
  total = total + inserted[i]
end
notify_net_ready(ARGV[1])
if total > 0 then redis.call('HINCRBY', K_STATS, 'total-jobs', total) end
return results
