-- put-with keys: "<tube> <key>" -> the id of the job put with it, in
-- <tag>:unique, while the job exists; once it is deleted, for the tube's
-- dedup-window more (<tag>:unique-gone: when each is forgotten, swept by
-- promoteDue.lua). The check and the store are in the put's own call, so
-- no two puts of one key both store.
--- @include "clock"
--- @include "settings"

-- Claims `key` of tube `name` for job `id` (a new key: one HSETNX). Returns
-- nil when claimed, else the id of the job that holds it (it exists, or its
-- window runs).
local function claim_key(name, key, id)
  local field, unique = name .. ' ' .. key, tag_key('unique')
  if redis.call('HSETNX', unique, field, id) == 1 then return nil end
  local unique_gone = tag_key('unique-gone')
  local gone = redis.call('ZSCORE', unique_gone, field)
  if gone and tonumber(gone) <= now_ms() then -- its window ran out, not swept yet
    redis.call('HSET', unique, field, id)
    redis.call('ZREM', unique_gone, field)
    return nil
  end
  return redis.call('HGET', unique, field)
end

-- The job of this key was deleted: the key is forgotten after the tube's dedup window.
local function forget_key_later(name, key)
  local field = name .. ' ' .. key
  local window = tube_settings(name).window
  if window == 0 then
    redis.call('HDEL', tag_key('unique'), field)
  else
    redis.call('ZADD', tag_key('unique-gone'), now_ms() + window * 1000, field)
  end
end

-- Keys whose window ran out by `now`, at most `limit` of them.
local function forget_due_keys(now, limit)
  local gone = tag_key('unique-gone')
  local due = redis.call('ZRANGEBYSCORE', gone, '-inf', now, 'LIMIT', 0, limit)
  if #due == 0 then return end
  redis.call('HDEL', tag_key('unique'), unpack(due))
  redis.call('ZREM', gone, unpack(due))
end
