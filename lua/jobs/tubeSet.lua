#!lua
--[[
  tube-set: one setting of a tube (includes/settings.lua), kept in the
  shard's tube-settings (it outlives the tube) and copied into the tube's
  meta hash while the tube exists (a reserve reads it there with the pause).
  A tube whose settings are all defaults again has no entry. Waiting
  reserves are woken: a limit may have been raised.
  KEYS  10 globals, then 5 for the tube
  ARGV  [1] events channel  [2] setting: max-reserved | reserve-rate |
        dedup-window  [3] value  [4] tube name
  Returns 1.
]]
--- @include "jobs"
local FIELD = { ['max-reserved'] = 'max', ['reserve-rate'] = 'rate', ['dedup-window'] = 'window' }
local T = tubes_from(4)[1]
local field = FIELD[ARGV[2]]
if not field then return redis.error_reply('ERR tubeSet: unknown setting ' .. ARGV[2]) end
local s = {}
for k, v in pairs(tube_settings(T.name)) do s[k] = v end
s[field] = tonumber(ARGV[3])
local exists = redis.call('HEXISTS', T.meta, 'num') == 1
if s.max == DEFAULT_SETTINGS.max and s.rate == DEFAULT_SETTINGS.rate and s.window == DEFAULT_SETTINGS.window then
  redis.call('HDEL', tag_key('tube-settings'), T.name)
  if exists then redis.call('HDEL', T.meta, 'settings') end
else
  local text = format_settings(s)
  redis.call('HSET', tag_key('tube-settings'), T.name, text)
  if exists then redis.call('HSET', T.meta, 'settings', text) end
end
if exists then notify_ready(ARGV[1], T.name, redis.call('ZCARD', T.ready)) end
return 1
