-- put-with keys: "<tube> <key>" -> the id of the job put with it, in
-- <tag>:unique, while the job exists; once it is deleted, for the tube's
-- dedup-window more (<tag>:unique-gone: when each is forgotten, swept by
-- promoteDue.lua). The check and the store are in the put's own call, so
-- no two puts of one key both store.
--- @include "clock"
--- @include "settings"
local K_UNIQUE, K_UNIQUE_GONE -- this call's, made on first use (begin_unique)

local function unique_keys()
  if not K_UNIQUE then
    local tag = string.sub(KEYS[1], 1, -6)
    K_UNIQUE, K_UNIQUE_GONE = tag .. ':unique', tag .. ':unique-gone'
  end
  return K_UNIQUE, K_UNIQUE_GONE
end

-- Claims `key` of tube `name` for job `id` (a new key: one HSETNX). Returns
-- nil when claimed, else the id of the job that holds it (it exists, or its
-- window runs).
local function claim_key(name, key, id)
  local field = name .. ' ' .. key
  local K_UNIQUE, K_UNIQUE_GONE = unique_keys()
  if redis.call('HSETNX', K_UNIQUE, field, id) == 1 then return nil end
  local gone = redis.call('ZSCORE', K_UNIQUE_GONE, field)
  if gone and tonumber(gone) <= now_ms() then -- its window ran out, not swept yet
    redis.call('HSET', K_UNIQUE, field, id)
    redis.call('ZREM', K_UNIQUE_GONE, field)
    return nil
  end
  return redis.call('HGET', K_UNIQUE, field)
end

-- The job of this key was deleted: the key is forgotten after the tube's dedup window.
local function forget_key_later(name, key)
  local field = name .. ' ' .. key
  local K_UNIQUE, K_UNIQUE_GONE = unique_keys()
  local window = tube_settings(name).window
  if window == 0 then
    redis.call('HDEL', K_UNIQUE, field)
  else
    redis.call('ZADD', K_UNIQUE_GONE, now_ms() + window * 1000, field)
  end
end

-- Keys whose window ran out by `now`, at most `limit` of them.
local function forget_due_keys(now, limit)
  local K_UNIQUE, K_UNIQUE_GONE = unique_keys()
  local due = redis.call('ZRANGEBYSCORE', K_UNIQUE_GONE, '-inf', now, 'LIMIT', 0, limit)
  if #due == 0 then return end
  redis.call('HDEL', K_UNIQUE, unpack(due))
  redis.call('ZREM', K_UNIQUE_GONE, unpack(due))
end

local function begin_unique()
  K_UNIQUE, K_UNIQUE_GONE = nil, nil
end
