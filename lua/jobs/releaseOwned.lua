#!lua flags=allow-oom
--[[
  A connection closed (or quit): every job it still holds goes back to ready
  at once, counting no timeout and no release (as beanstalkd).
  KEYS  8 globals, then 5 per tube
  ARGV  [1] events channel  [2] owner  [3] tube count n  [4..3+n] tube names
        then 2 per job: id, tube index
  Returns how many jobs went back.
]]
--- @include "jobs"
local n = tonumber(ARGV[3])
local Ts = tubes_from(4, n)
local moved = {}
for i = 1, n do moved[i] = 0 end
local total = 0
for a = 4 + n, #ARGV, 2 do
  local id, ti = ARGV[a], tonumber(ARGV[a + 1])
  local j, body = load_reserved_by(id, ARGV[2])
  if j then
    leave_reserved(Ts[ti], id)
    enter_ready(Ts[ti], id, j)
    save_job(id, j, body)
    moved[ti] = moved[ti] + 1
    total = total + 1
  end
end
for i = 1, n do notify_ready(ARGV[1], Ts[i].name, moved[i]) end
return total
