-- Redis' own clock: one clock for every sidecar (scripts never use the
-- sidecar's time). Due times are stored in milliseconds; time left is
-- measured in microseconds, so that, as beanstalkd (nanoseconds, truncated),
-- a 10-second TTR looked at right after it started has 9 whole seconds left.
-- Read once a call: every time a call uses is the same instant (and one TIME).
local call_us -- this call's (begin_clock)
local function now_us()
  if not call_us then
    local t = redis.call('TIME')
    call_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return call_us
end

local function now_ms()
  return math.floor(now_us() / 1000)
end

-- Now in ms with its fraction (to the us): a job's creation time, so that jobs
-- put within the same ms into different shards still compare in put order.
local function now_ms_exact()
  return now_us() / 1000
end

-- Microseconds from now until a due time in ms, at least 0.
local function us_until(due_ms)
  return math.max(0, due_ms * 1000 - now_us())
end

local function begin_clock()
  call_us = nil
end
