#!lua
--[[
  Inserts jobs: one or many, into one or more tubes, in one call.
  KEYS  8 globals, then 5 per tube (includes/common.lua)
  ARGV  [1] events channel  [2] shard count  [3] this shard  [4] tube count n
        [5..4+n] tube names (in KEYS order)
        then 5 per job: tube index (1-based), pri, delay s, ttr s, body
  Returns the new job ids, in ARGV order. A job id tells its shard:
  id = seq * shards + shard, so with one shard ids are 1, 2, 3, ...
]]
--- @include "common"
local now = now_ms()
local shards, shard, ntubes = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local names, Ts, became_ready = {}, {}, {}
for i = 1, ntubes do
  names[i] = ARGV[4 + i]
  Ts[i] = tube_keys(i)
  became_ready[i] = 0
  ensure_tube(names[i])
end
local ids = {}
for a = 5 + ntubes, #ARGV, 5 do
  local ti = tonumber(ARGV[a])
  local T = Ts[ti]
  local delay = tonumber(ARGV[a + 2])
  local id = fmt_int(redis.call('INCR', K_SEQ) * shards + shard)
  local j = { names[ti], tonumber(ARGV[a + 1]), delay, tonumber(ARGV[a + 3]), READY, now, 0, '', 0, 0, 0, 0, 0 }
  if delay > 0 then
    enter_delayed(T, id, j, now, delay)
  else
    enter_ready(T, id, j)
    became_ready[ti] = became_ready[ti] + 1
  end
  save_job(id, j)
  redis.call('HSET', K_BODIES, id, ARGV[a + 4])
  redis.call('HINCRBY', T.meta, 'total-jobs', 1)
  ids[#ids + 1] = id
end
redis.call('HINCRBY', K_STATS, 'total-jobs', #ids)
for i = 1, ntubes do notify_ready(ARGV[1], names[i], became_ready[i]) end
return ids
