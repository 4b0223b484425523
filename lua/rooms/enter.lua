#!lua
--[[
  enter <room> <user>: a participant stays inside (a check-in); a holder of a
  grace ticket gets straight back in; anyone else gets in when their place in
  line (a newcomer's: the end of the line) is within the places open now,
  else waits in line (a check-in). Lapsed people are removed first.
  KEYS  7 room keys (includes/room.lua)
  ARGV  [1] room  [2] user  [3..6] the sidecar's default settings
  Returns {1} entered, or {0, position, eta s} waiting.
]]
--- @include "room"
return arrive(ARGV[2], true)
