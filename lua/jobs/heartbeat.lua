#!lua flags=allow-oom
--[[
  A sidecar says it is alive and stores a snapshot of its connection-level
  counters (connections, per-command counts, per-tube using/watching/waiting)
  so that `stats` on any sidecar sums every live sidecar.
  KEYS  10 globals, then [11] this sidecar's stats hash
  ARGV  [1] sidecar id  [2] ttl ms  [3..] field, value pairs: the whole
        snapshot; or '+' and then only the fields that changed, a field
        whose value is '' removed (src/server/counters.ts)
  A whole snapshot also records the job record format this sidecar reads,
  and every beat raises the data set's format once all
  live sidecars read it (includes/jobs.lua raise_format).
  Returns 1 when the sidecar held no lease (first beat) or its lease had
  lapsed (it may have been reaped: it must re-register its tube references,
  and send its whole snapshot), else 0. A ttl of 0 ends the lease now (a
  sidecar leaving).
]]
--- @include "jobs"
--- @variant sections
local now = now_ms()
local expiry = redis.call('ZSCORE', K_NODES, ARGV[1])
redis.call('ZADD', K_NODES, now + tonumber(ARGV[2]), ARGV[1])
local added = (not expiry or tonumber(expiry) <= now) and 1 or 0
local from = 3
if ARGV[3] == '+' then from = 4 else redis.call('DEL', KEYS[GLOBALS + 1]) end
local set, gone = {}, {}
local function flush()
  if #set > 0 then redis.call('HSET', KEYS[GLOBALS + 1], unpack(set)) end
  if #gone > 0 then redis.call('HDEL', KEYS[GLOBALS + 1], unpack(gone)) end
  set, gone = {}, {}
end
for i = from, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    gone[#gone + 1] = ARGV[i]
  else
    set[#set + 1], set[#set + 2] = ARGV[i], ARGV[i + 1]
  end
  if #set + #gone >= 1000 then flush() end
end
flush()
if from == 3 then record_format_of(ARGV[1]) end
raise_format(now)
return added
