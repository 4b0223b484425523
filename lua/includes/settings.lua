-- A tube's settings (tube-set, lua/jobs/tubeSet.lua): max-reserved,
-- reserve-rate, dedup-window. Kept in <tag>:tube-settings as one string per
-- tube that has any ("max rate window"), which outlives the tube; a tube's
-- meta hash holds a copy in 'settings' (written by tube-set, and by
-- ensure_tube when the tube comes back), so that a reserve reads it with the
-- pause it reads anyway.
--- @include "tag"
local DEFAULT_SETTINGS = { max = 0, rate = 0, window = 300 }
local settings_seen -- this call's, made on first use (most calls need none): tube name -> settings

local function parse_settings(s)
  if not s then return DEFAULT_SETTINGS end
  local max, rate, window = string.match(s, '^(%d+) (%d+) (%d+)$')
  return { max = tonumber(max), rate = tonumber(rate), window = tonumber(window) }
end

local function format_settings(s)
  return s.max .. ' ' .. s.rate .. ' ' .. s.window
end

-- A tube's settings: from a copy read already (its meta's, `copy`), or asked.
local function tube_settings(name, copy)
  settings_seen = settings_seen or {}
  local s = settings_seen[name]
  if not s then
    if copy == nil then copy = redis.call('HGET', tag_key('tube-settings'), name) end
    s = parse_settings(copy or nil)
    settings_seen[name] = s
  end
  return s
end

local function begin_settings()
  settings_seen = nil
end
