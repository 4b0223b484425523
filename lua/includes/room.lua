-- Waiting-room helpers of the lua/rooms/*.lua scripts (called by
-- src/store/redis/room-store.ts), made once when the function library loads. A room has a capacity, people inside, people
-- holding a grace ticket (a place kept for a participant who just left), and
-- a line of people waiting to get in. Time is Redis' clock, in milliseconds.
--
-- Keys (one hash tag with every other redstalk key, see Keys.room):
--   KEYS[1] rooms    zset  room name -> ms until which the room exists (+inf: it has settings)
--   KEYS[2] room     hash  settings: capacity, checkin-timeout, participant-timeout, grace (s),
--                          rate-limit (per minute), paused, lottery-until (ms), lottery-salt,
--                          configured; counters (*-total); admission rate (recent, recent-at);
--                          seq (the last arrival number)
--   KEYS[3] inside   zset  participant -> last check-in ms
--   KEYS[4] tickets  zset  participant who left -> last ms of their grace ticket
--   KEYS[5] line     zset  waiting person -> place in line (arrival number, or lottery draw)
--   KEYS[6] seen     zset  waiting person -> last check-in ms
--   KEYS[7] admits   zset  admission number -> ms, over the last minute (for the rate limit)
-- Scripts that need a room's settings take ARGV [1] room, [2] user (or ''),
-- [3..6] the sidecar's defaults for settings the room lacks: capacity,
-- check-in timeout s, participant timeout s, grace s.
-- This call's keys (begin_room): the helpers are made once, when the library loads.
local K_ROOMS, K_ROOM, K_INSIDE, K_TICKETS, K_LINE, K_SEEN, K_ADMITS
local ROOM_KEYS

-- The admission rate is a count of admissions decaying with a time constant
-- of one minute: in a steady state it equals the admissions per minute.
local RATE_TAU_MS = 60000
-- The rate limit counts admissions in a sliding minute, [now - 60 s, now].
local RATE_WINDOW_MS = 60000
-- Below this rate (per minute: one admission about three minutes ago) there is no estimate.
local MIN_RATE = 0.05
-- Lapsed waiters are removed this many at a time (ZREM takes them as arguments).
local PURGE_BATCH = 1000

--- @include "clock"

-- An exclusive score bound; tostring would round ms to 14 digits.
local function excl(n)
  return '(' .. string.format('%.0f', n)
end

local function load_room()
  local h = redis.call('HMGET', K_ROOM, 'capacity', 'checkin-timeout', 'participant-timeout', 'grace',
    'rate-limit', 'paused', 'lottery-until', 'lottery-salt', 'configured', 'recent', 'recent-at')
  return {
    name = ARGV[1],
    capacity = tonumber(h[1] or ARGV[3]),
    checkin_ms = tonumber(h[2] or ARGV[4]) * 1000,
    participant_ms = tonumber(h[3] or ARGV[5]) * 1000,
    grace_ms = tonumber(h[4] or ARGV[6]) * 1000,
    rate_limit = tonumber(h[5] or '0'),
    paused = h[6] == '1',
    lottery_until = tonumber(h[7] or '0'),
    salt = h[8] or '',
    configured = h[9] == '1',
    recent = tonumber(h[10] or '0'),
    recent_at = tonumber(h[11] or '0'),
  }
end

local function count(field, n)
  if n > 0 then redis.call('HINCRBY', K_ROOM, field, n) end
end

-- Entries scored by time lapse when their score is below a cutoff. Whether
-- any has: ZRANGE 0 0 reads the head of the sorted set in O(1), so a call
-- with nothing to remove walks no skiplist.
local function oldest_before(key, cutoff)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return first[2] ~= nil and tonumber(first[2]) < cutoff
end

local function drop_before(key, cutoff)
  if not oldest_before(key, cutoff) then return 0 end
  return redis.call('ZREMRANGEBYSCORE', key, '-inf', excl(cutoff))
end

-- Removes everyone whose time ran out before anything is counted, so no
-- lapsed person is ever counted ahead of anyone. Each is removed once, by the
-- first call that finds them lapsed: the cost is amortised over the lapses.
local function purge(R, now)
  count('tickets-expired-total', drop_before(K_TICKETS, now))
  count('participant-timeouts-total', drop_before(K_INSIDE, now - R.participant_ms))
  local cutoff, dropouts = now - R.checkin_ms, 0
  while oldest_before(K_SEEN, cutoff) do
    local lapsed = redis.call('ZRANGEBYSCORE', K_SEEN, '-inf', excl(cutoff), 'LIMIT', 0, PURGE_BATCH)
    redis.call('ZREM', K_LINE, unpack(lapsed))
    redis.call('ZREM', K_SEEN, unpack(lapsed))
    dropouts = dropouts + #lapsed
  end
  count('dropouts-total', dropouts)
  drop_before(K_ADMITS, now - RATE_WINDOW_MS)
end

-- Who is inside, holding a ticket and waiting, and the admissions of the
-- rate window. After purge nobody in the sets has lapsed and ZCARD is exact
-- in O(1); a reader, which may not remove anyone, counts the live part.
local function live_counts(R, now, purged)
  if purged then
    return { inside = redis.call('ZCARD', K_INSIDE), tickets = redis.call('ZCARD', K_TICKETS),
             waiting = redis.call('ZCARD', K_LINE), admits = redis.call('ZCARD', K_ADMITS) }
  end
  return {
    inside = redis.call('ZCOUNT', K_INSIDE, now - R.participant_ms, '+inf'),
    tickets = redis.call('ZCOUNT', K_TICKETS, now, '+inf'),
    waiting = redis.call('ZCOUNT', K_SEEN, now - R.checkin_ms, '+inf'),
    admits = redis.call('ZCOUNT', K_ADMITS, now - RATE_WINDOW_MS, '+inf'),
  }
end

-- How many people from the front of the line may enter now: the free places
-- (a ticket holds one), within the rate limit; none while paused or before a
-- lottery's event starts.
local function places_open(R, C, now)
  if R.paused or now < R.lottery_until then return 0 end
  local open = R.capacity - C.inside - C.tickets
  if R.rate_limit > 0 then open = math.min(open, R.rate_limit - C.admits) end
  return math.max(0, open)
end

-- Admissions per minute, decayed to now.
local function admission_rate(R, now)
  return R.recent * math.exp((R.recent_at - now) / RATE_TAU_MS)
end

-- Estimated wait at `position`: ceil(position / admissions per second), the
-- rate capped by the rate limit, plus the time until a lottery's event
-- starts. 0 means no estimate: paused, or no recent admissions.
local function eta_seconds(R, now, position)
  local per_minute = admission_rate(R, now)
  if R.paused or per_minute < MIN_RATE then return 0 end
  if R.rate_limit > 0 then per_minute = math.min(per_minute, R.rate_limit) end
  local eta = math.ceil(position * 60 / per_minute)
  if now < R.lottery_until then eta = eta + math.ceil((R.lottery_until - now) / 1000) end
  return eta
end

local function admit(R, user, now)
  redis.call('ZADD', K_INSIDE, now, user)
  local n = redis.call('HINCRBY', K_ROOM, 'admitted-total', 1)
  if R.rate_limit > 0 then redis.call('ZADD', K_ADMITS, now, n) end
  redis.call('HSET', K_ROOM, 'recent', admission_rate(R, now) + 1, 'recent-at', now)
end

-- Puts a newcomer in line and returns their position. The place is the next
-- arrival number (FIFO); during a pre-queue it is a draw fixed per person
-- (sha1 of the lottery's salt and the user, so re-joining draws nothing new)
-- between the last arrival number and the next: the pre-queue is shuffled,
-- behind everyone who waited before it and ahead of everyone after the start.
local function join_line(R, user, now)
  local place
  if now < R.lottery_until then
    local draw = tonumber(string.sub(redis.sha1hex(R.salt .. user), 1, 13), 16)
    place = tonumber(redis.call('HGET', K_ROOM, 'seq') or '0') + (draw + 0.5) / 2 ^ 52
  else
    place = redis.call('HINCRBY', K_ROOM, 'seq', 1)
  end
  redis.call('ZADD', K_LINE, place, user)
  redis.call('ZADD', K_SEEN, now, user)
  return redis.call('ZRANK', K_LINE, user) + 1
end

-- A room without settings of its own is forgotten once nobody can still be
-- in it: after its longest timeout without a change its keys expire and it
-- leaves the index (whose dead entries every change trims).
local function keep_alive(R, now)
  drop_before(K_ROOMS, now)
  if R.configured then return end
  local until_ms = now + math.max(R.checkin_ms, R.participant_ms, R.grace_ms)
  redis.call('ZADD', K_ROOMS, until_ms, R.name)
  for _, key in ipairs(ROOM_KEYS) do redis.call('PEXPIREAT', key, until_ms) end
end

-- A room given any setting keeps it: it stays listed and never expires.
local function keep_for_good()
  redis.call('HSET', K_ROOM, 'configured', 1)
  redis.call('ZADD', K_ROOMS, '+inf', ARGV[1])
  for _, key in ipairs(ROOM_KEYS) do redis.call('PERSIST', key) end
end

-- enter and check. Returns {1} when `user` is inside, or (entering) got in
-- now, or (checking) may enter now; else {0, position, eta s}. Either is a
-- check-in; a newcomer who cannot get in joins the line.
local function arrive(user, entering)
  local now = now_ms()
  local R = load_room()
  purge(R, now)
  local answer = { 1 }
  if redis.call('ZSCORE', K_INSIDE, user) then
    redis.call('ZADD', K_INSIDE, now, user)
  elseif redis.call('ZSCORE', K_TICKETS, user) then
    -- Back within the grace period: the place was kept for them.
    if entering then
      redis.call('ZREM', K_TICKETS, user)
      redis.call('ZADD', K_INSIDE, now, user)
      count('tickets-used-total', 1)
    end
  else
    local rank = redis.call('ZRANK', K_LINE, user)
    local C = live_counts(R, now, true)
    local position = rank and rank + 1 or C.waiting + 1
    local may_enter = position <= places_open(R, C, now)
    if may_enter and entering then
      if rank then
        redis.call('ZREM', K_LINE, user)
        redis.call('ZREM', K_SEEN, user)
      end
      admit(R, user, now)
    else
      if rank then
        redis.call('ZADD', K_SEEN, now, user)
      elseif not may_enter then
        position = join_line(R, user, now)
      end
      if not may_enter then answer = { 0, position, eta_seconds(R, now, position) } end
    end
  end
  keep_alive(R, now)
  return answer
end

-- Sets this call's keys; the entry the loader writes for each room function
-- calls it first (a function library's module-level locals outlive a call).
local function begin_room()
  K_ROOMS, K_ROOM, K_INSIDE, K_TICKETS, K_LINE, K_SEEN, K_ADMITS =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
  ROOM_KEYS = { K_ROOM, K_INSIDE, K_TICKETS, K_LINE, K_SEEN, K_ADMITS }
end
