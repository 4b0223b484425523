#!lua flags=allow-oom
--[[
  Removes a sidecar from the live set (clean shutdown, or reaping one whose
  heartbeat expired, after its tube references were dropped with refTube),
  and the watch lists its connections stored in this shard (batch.lua 's'),
  unless its lease is live: one that renewed it after the reaper found it
  dead stays (a leaving sidecar ends its lease first). Its entry stays an
  hour as a tombstone (score: minus the time it was forgotten): a reserve of
  it that reaches Redis later takes nothing (includes/jobs.lua lease_allows),
  and a beat of it takes a lease again.
  KEYS  10 globals, then [11] that sidecar's stats hash, [12] the index of its watch lists
  ARGV  [1] sidecar id
  Returns 1 when it was removed, else 0.
]]
--- @include "jobs"
local TOMBSTONE_MS = 3600000
local now = now_ms()
local expiry = redis.call('ZSCORE', K_NODES, ARGV[1])
if expiry and tonumber(expiry) > now then return 0 end
redis.call('ZADD', K_NODES, fmt_int(-now), ARGV[1])
redis.call('ZREMRANGEBYSCORE', K_NODES, '(' .. fmt_int(TOMBSTONE_MS - now), '(0')
redis.call('DEL', KEYS[GLOBALS + 1])
redis.call('HDEL', tag_key('node-formats'), ARGV[1])
local owners = redis.call('SMEMBERS', KEYS[GLOBALS + 2])
for i = 1, #owners, 500 do
  local keys = {}
  for k = i, math.min(i + 499, #owners) do keys[#keys + 1] = TAG .. ':watch:' .. owners[k] end
  redis.call('DEL', unpack(keys))
end
redis.call('DEL', KEYS[GLOBALS + 2])
return 1
