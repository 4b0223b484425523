#!lua
--[[
  A connection closed (or quit): every job it still holds goes back to ready
  at once, counting no timeout and no release (as beanstalkd).
  KEYS  8 globals, then 5 per tube
  ARGV  [1] events channel  [2] owner  [3] tube count n  [4..3+n] tube names
        then 2 per job: id, tube index
  Returns how many jobs went back.
]]
--- @include "common"
local n = tonumber(ARGV[3])
local names, Ts, moved = {}, {}, {}
for i = 1, n do names[i] = ARGV[3 + i]; Ts[i] = tube_keys(i); moved[i] = 0 end
local total = 0
for a = 4 + n, #ARGV, 2 do
  local id, ti = ARGV[a], tonumber(ARGV[a + 1])
  local j = load_job(id)
  if j and j[F_STATE] == RESERVED and j[F_OWNER] == ARGV[2] then
    leave_reserved(Ts[ti], id, j)
    enter_ready(Ts[ti], id, j)
    save_job(id, j)
    moved[ti] = moved[ti] + 1
    total = total + 1
  end
end
for i = 1, n do notify_ready(ARGV[1], names[i], moved[i]) end
return total
