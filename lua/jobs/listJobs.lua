#!lua flags=no-writes
--[[
  The jobs of one tube in one state, a page at a time, in the order of the
  state's zset (ready: reserve order; delayed: due time; buried: bury order;
  reserved: deadline, from the shard's reserved zset, other tubes' skipped);
  with a needle, only the jobs whose id is it or whose body holds it (a search).
  At most ARGV[5] members are looked at a call, so a page over 10,000 jobs
  never blocks Redis for long; the cursor says where the next call goes on.
  KEYS  10 globals, then 5 for the tube
  ARGV  [1] tube name  [2] 'ready' | 'delayed' | 'buried' | 'reserved'
        [3] cursor: '' from the start, else "<score> <member>" of the last
            member looked at (it may have left since: the page goes on after
            where it would sort)
        [4] most jobs to return  [5] most members to look at
        [6] needle ('' for every job)  [7] body bytes to return per job
  Returns { next cursor ('' when the zset was read to its end), members
  looked at, then per job: the job_reply fields (includes/jobs.lua), its
  holder ('' unless reserved), its body's first ARGV[7] bytes }.
]]
--- @include "jobs"

-- Byte order, as Redis sorts members of equal score (Lua's < may follow the locale).
local function sorts_before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The rank after the cursor's place: the member's own when it is still
-- there with that score, else found among the members of its score.
local function rank_after(key, cursor)
  if cursor == '' then return 0 end
  local space = string.find(cursor, ' ', 1, true)
  local score, m = string.sub(cursor, 1, space - 1), string.sub(cursor, space + 1)
  if redis.call('ZSCORE', key, m) == score then return redis.call('ZRANK', key, m) + 1 end
  local lo = redis.call('ZCOUNT', key, '-inf', '(' .. score)
  local hi = lo + redis.call('ZCOUNT', key, score, score)
  while lo < hi do -- the first of the score's run that sorts after m
    local mid = math.floor((lo + hi) / 2)
    if sorts_before(m, redis.call('ZRANGE', key, mid, mid)[1]) then hi = mid else lo = mid + 1 end
  end
  return lo
end

--- @call
local T = tubes_from(1, 1)[1]
local state, limit, budget, needle, preview = ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local key = state == 'reserved' and K_RESERVED or T[state]
local now = now_ms()
local rank = rank_after(key, ARGV[3])
local out = { '', 0 }
local looked, found, last, last_rank, ended = 0, 0, nil, nil, false
while not ended and looked < budget and found < limit do
  local want = math.min(100, budget - looked)
  local ms = redis.call('ZRANGE', key, rank, rank + want - 1, 'WITHSCORES')
  local ids, mine = {}, {}
  for k = 1, #ms, 2 do
    ids[#ids + 1] = member_id(ms[k])
    if state ~= 'reserved' or member_tube(ms[k]) == T.name then mine[#mine + 1] = ids[#ids] end
  end
  prefetch_jobs(mine)
  prefetch_bodies(mine)
  for k = 1, #ms, 2 do
    looked = looked + 1
    last, last_rank = ms[k + 1] .. ' ' .. ms[k], rank + (k - 1) / 2
    local id = ids[(k + 1) / 2]
    local j, body = nil, nil
    if state ~= 'reserved' or member_tube(ms[k]) == T.name then
      j = load_job(id)
      body = j and job_body(id)
    end
    if j and (needle == '' or id == needle or string.find(body, needle, 1, true)) then
      for _, v in ipairs(job_reply(id, j, now)) do out[#out + 1] = v end
      out[#out + 1] = j[F_OWNER]
      out[#out + 1] = string.sub(body, 1, preview)
      found = found + 1
      if found == limit then break end
    end
  end
  rank = rank + #ms / 2
  ended = #ms < want * 2 and found < limit
end
-- A page that stops on the zset's last member says so (no empty page to ask for).
if last_rank and last_rank + 1 >= redis.call('ZCARD', key) then ended = true end
out[1], out[2] = ended and '' or (last or ARGV[3]), looked
return out
