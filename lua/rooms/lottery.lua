#!lua flags=allow-oom
--[[
  room-lottery <room> <seconds>: a pre-queue for an event that starts in
  `seconds`. Until then nobody is admitted and everyone who joins the line
  gets a place by a random draw (includes/room.lua join_line); at the start
  admission opens and later arrivals queue behind the pre-queue, FIFO. 0
  starts the event now. A new pre-queue gets a fresh salt and comes after
  everyone already waiting; moving the start of a running one keeps its salt,
  so every draw stays as it was.
  KEYS  7 room keys (includes/room.lua)
  ARGV  [1] room  [2] seconds  [3] salt (random hex from the sidecar)
  Returns 1.
]]
--- @include "room"
local now = now_ms()
local seconds = tonumber(ARGV[2])
local running = tonumber(redis.call('HGET', K_ROOM, 'lottery-until') or '0') > now
if seconds > 0 and not running then
  redis.call('HSET', K_ROOM, 'lottery-salt', ARGV[3])
  -- Past every arrival number given out so far, earlier pre-queues included.
  redis.call('HINCRBY', K_ROOM, 'seq', 1)
end
redis.call('HSET', K_ROOM, 'lottery-until', now + seconds * 1000)
keep_for_good()
return 1
