#!lua flags=no-writes
--[[
  stats-room <room>: the room as it is now, as if everyone lapsed had been
  removed (they are counted as gone, in the totals too).
  KEYS  7 room keys (includes/room.lua)
  ARGV  [1] room  [2] ''  [3..6] the sidecar's default settings
  Returns {} when the room does not exist, else: capacity, checkin-timeout s,
  participant-timeout s, grace s, rate-limit per minute, paused (0/1),
  lottery ms left, configured (0/1), participants, tickets, waiting, open
  places, admitted-total, dropouts-total, left-total,
  participant-timeouts-total, tickets-used-total, tickets-expired-total,
  admission rate per minute (string, 3 decimals), eta s of the last in line.
]]
--- @include "room"
local now = now_ms()
local exists_until = redis.call('ZSCORE', K_ROOMS, ARGV[1])
if not exists_until or tonumber(exists_until) < now then return {} end
local R = load_room()
local C = live_counts(R, now, false)
local t = redis.call('HMGET', K_ROOM, 'admitted-total', 'dropouts-total', 'left-total',
  'participant-timeouts-total', 'tickets-used-total', 'tickets-expired-total')
local function total(i) return tonumber(t[i] or '0') end
local function b(flag) return flag and 1 or 0 end
return {
  R.capacity, R.checkin_ms / 1000, R.participant_ms / 1000, R.grace_ms / 1000, R.rate_limit, b(R.paused),
  math.max(0, R.lottery_until - now), b(R.configured),
  C.inside, C.tickets, C.waiting, places_open(R, C, now),
  total(1),
  total(2) + redis.call('ZCOUNT', K_SEEN, '-inf', excl(now - R.checkin_ms)),
  total(3),
  total(4) + redis.call('ZCOUNT', K_INSIDE, '-inf', excl(now - R.participant_ms)),
  total(5),
  total(6) + redis.call('ZCOUNT', K_TICKETS, '-inf', excl(now)),
  string.format('%.3f', admission_rate(R, now)),
  C.waiting > 0 and eta_seconds(R, now, C.waiting) or 0,
}
