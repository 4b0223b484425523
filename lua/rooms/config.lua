#!lua flags=allow-oom
--[[
  room-config, room-rate, pause-room: stores settings of a room, which keeps
  them for good (it stays listed and its keys never expire).
  KEYS  7 room keys (includes/room.lua)
  ARGV  [1] room  then field/value pairs among capacity, checkin-timeout,
        participant-timeout, grace (s), rate-limit (per minute, 0: none),
        paused (0/1)
  Returns 1.
]]
--- @include "room"
redis.call('HSET', K_ROOM, unpack(ARGV, 2))
keep_for_good()
return 1
