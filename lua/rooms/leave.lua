#!lua flags=allow-oom
--[[
  leave <room> <user>: a participant leaves and holds a grace ticket (their
  place is kept for the grace period: enter within it gets them straight back
  in; then the place goes to the next person); someone waiting leaves the
  line; a ticket holder gives the ticket up (their place is free at once).
  KEYS  7 room keys (includes/room.lua)
  ARGV  [1] room  [2] user  [3..6] the sidecar's default settings
  Returns 1 left, 0 when the user is neither inside, in line nor holding a ticket.
]]
--- @include "room"
local now = now_ms()
local R = load_room()
purge(R, now)
local user = ARGV[2]
if redis.call('ZREM', K_INSIDE, user) == 1 then
  if R.grace_ms > 0 then redis.call('ZADD', K_TICKETS, now + R.grace_ms, user) end
  count('left-total', 1)
elseif redis.call('ZREM', K_LINE, user) == 1 then
  redis.call('ZREM', K_SEEN, user)
  count('left-total', 1)
elseif redis.call('ZREM', K_TICKETS, user) == 0 then
  return 0
end
keep_alive(R, now)
return 1
