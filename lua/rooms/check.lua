#!lua
--[[
  check <room> <user>: a check-in. Inside, holding a grace ticket, or within
  the places open now: ready (check never admits anyone; enter does). Else the
  person waits, joining the end of the line if not in it. Lapsed people are
  removed first.
  KEYS  7 room keys (includes/room.lua)
  ARGV  [1] room  [2] user  [3..6] the sidecar's default settings
  Returns {1} ready, or {0, position, eta s} waiting.
]]
--- @include "room"
return arrive(ARGV[2], false)
