-- Redis' own clock, in milliseconds: one clock for every sidecar (scripts
-- never use the sidecar's time).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
