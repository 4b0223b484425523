-- The shard's hash tag. Every key a job script names or derives shares it, so
-- all of a shard's keys live in one slot; KEYS[1] is always <tag>:jobs
-- (includes/jobs.lua). Keys named by no script's KEYS are derived from it:
-- tag_key('tube-settings'), tag_key('unique'), tag_key('expiring'), ...
local TAG -- this call's (begin_tag)

local function tag_key(name)
  return TAG .. ':' .. name
end

local function begin_tag()
  TAG = string.sub(KEYS[1], 1, -6)
end
