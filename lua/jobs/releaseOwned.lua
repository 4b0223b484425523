#!lua flags=allow-oom
--[[
  A connection closed (or quit): every job it still holds goes back to ready
  at once, counting no timeout and no release (as beanstalkd). Also for all
  the connections of a sidecar that died: `owner` is then "<node>:", and
  every job whose holder starts with it goes back, unless that sidecar's
  lease is live (it renewed its lease after the reaper found it dead, and
  may have handed out new reservations since).
  KEYS  10 globals, then 5 per tube
  ARGV  [1] events channel  [2] owner, or "<node>:"  [3] tube count n
        [4..3+n] tube names, then 2 per job: id, tube index
  Returns how many jobs went back.
]]
--- @include "jobs"
local owner = ARGV[2]
local whole_node = owner:sub(-1) == ':'
if whole_node then
  local expiry = redis.call('ZSCORE', K_NODES, owner:sub(1, -2))
  if expiry and tonumber(expiry) > now_ms() then return 0 end
end
local function held(id)
  if not whole_node then return load_reserved_by(id, owner) end
  local j = load_job(id)
  if j and j[F_STATE] == RESERVED and j[F_OWNER]:sub(1, #owner) == owner then return j end
  return nil
end
local n = tonumber(ARGV[3])
local Ts = tubes_from(4, n)
local moved = {}
for i = 1, n do moved[i] = 0 end
local total = 0
for a = 4 + n, #ARGV, 2 do
  local id, ti = ARGV[a], tonumber(ARGV[a + 1])
  local j = held(id)
  if j then
    leave_reserved(Ts[ti], id, j)
    enter_ready(Ts[ti], id, j)
    save_job(id, j)
    moved[ti] = moved[ti] + 1
    total = total + 1
  end
end
for i = 1, n do notify_ready(ARGV[1], Ts[i].name, moved[i]) end
write_back()
return total
