-- What a reserve may take from a tube now: nothing while it is paused or at
-- a limit of its settings (tube-set: max-reserved, reserve-rate), else up to
-- what its limits leave. Every reserve of batch.lua asks here, in its call,
-- on Redis' clock, so the limits hold across sidecars.
--
-- reserve-rate n is exact over any one-second window: each reserve spends a
-- token that comes back a second later, kept as the tube's last second of
-- reserves (<meta>:spent, "<job id>.<its reserve count>" -> ms). A bucket
-- refilled at n a second would let 2n through in a second that straddles a
-- full bucket.
--- @include "jobs"
-- this call's: tube name -> { pause = ms, s = settings, reserved = its jobs
-- reserved when the call began (the count is written only at its end)
local gates

local function gate(T)
  gates = gates or {}
  local g = gates[T.name]
  if not g then
    local m = redis.call('HMGET', T.meta, 'pause-until', 'settings', 'reserved')
    g = { pause = tonumber(m[1] or '0'), s = tube_settings(T.name, m[2]), reserved = tonumber(m[3] or '0') }
    gates[T.name] = g
  end
  return g
end

local function spent_key(T)
  return T.meta .. ':spent'
end

-- Reserves of T's jobs in the last second: (now - 1000, now].
local function spent_lately(T, now)
  return redis.call('ZCOUNT', spent_key(T), '(' .. (now - 1000), '+inf')
end

-- Jobs of T reserved now, counting this call's reserves and releases (not written yet).
local function reserved_now(T)
  local moved = reserved_moved[T.name]
  return gate(T).reserved + (moved and moved.n or 0)
end

-- How many of T's jobs a reserve may take now (math.huge: no limit).
local function slots(T, now)
  local g = gate(T)
  if g.pause > now then return 0 end
  local s, n = g.s, math.huge
  if s.max > 0 then n = math.max(0, s.max - reserved_now(T)) end
  if s.rate > 0 and n > 0 then n = math.min(n, math.max(0, s.rate - spent_lately(T, now))) end
  return n
end

-- When a tube without a slot may hand out a job again (ms), as far as time
-- tells: the end of a pause, or when the last second's oldest reserve that
-- holds the rate back is a second old. Under max-reserved a freed slot wakes
-- the waiters (notify_net_ready); they look again a second later regardless.
local function reopens_at(T, now)
  local g = gate(T)
  if g.pause > now then return g.pause end
  local at
  if g.s.rate > 0 then
    local over = spent_lately(T, now) - g.s.rate
    if over >= 0 then
      local oldest = redis.call('ZRANGEBYSCORE', spent_key(T), '(' .. (now - 1000), '+inf', 'WITHSCORES', 'LIMIT', over, 1)
      if oldest[2] then at = tonumber(oldest[2]) + 1000 end
    end
  end
  if g.s.max > 0 and (not at or at > now + 1000) and slots(T, now) == 0 then at = now + 1000 end
  return at
end

-- A reserve took job `id` of T: it spends a token of the rate, and holds a slot of max-reserved.
local function take_slot(T, id, j, now)
  local s = gate(T).s
  if s.max > 0 then j[F_LIMITED] = 1 end
  if s.rate > 0 then
    local key = spent_key(T)
    redis.call('ZADD', key, now, id .. '.' .. j[F_RESERVES]) -- one member per reserve, not per job
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - 1000)
  end
end

local function begin_limits()
  gates = nil
end
