#!lua flags=no-writes
--[[
  list-rooms: the rooms that exist now.
  KEYS  [1] the rooms index (includes/room.lua)
  ARGV  none
  Returns the room names.
]]
--- @include "room"
return redis.call('ZRANGEBYSCORE', K_ROOMS, now_ms(), '+inf')
