#!lua
--[[
  The dashboard's last hour, kept in Redis so that every sidecar shows the
  same charts: one sample per slot of ARGV[1] ms on Redis' clock, the first
  one a sidecar sends in that slot (the others' are dropped), and no more
  than ARGV[2] samples (the oldest go).
  KEYS  [1] the history zset (score: the slot's start in ms, member: the sample)
  ARGV  [1] slot ms  [2] samples kept  [3] the sample: a JSON object, to
        which the slot's start is added as "t"
  Returns 1 when the sample was kept, 0 when the slot had one already.
]]
--- @include "clock"
local slot_ms, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local slot = math.floor(now_ms() / slot_ms) * slot_ms
if #redis.call('ZRANGEBYSCORE', KEYS[1], slot, slot, 'LIMIT', 0, 1) > 0 then return 0 end
local body = string.sub(ARGV[3], 2)
redis.call('ZADD', KEYS[1], slot, '{"t":' .. string.format('%.0f', slot) .. (body == '}' and '' or ',') .. body)
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(keep + 1))
return 1
