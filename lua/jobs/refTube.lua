#!lua flags=allow-oom
--[[
  A sidecar starts or stops referencing a tube (some connection of it uses or
  watches the tube). The tube exists while referenced; when the last
  reference goes and the tube is empty, it is removed.
  KEYS  10 globals, then 5 for the tube
  ARGV  [1] sidecar id  [2] +1 / -1, or 'drop' (forget this sidecar's
        references, e.g. a dead sidecar)  [3] tube name
  Returns 1 when the tube exists afterwards, else 0.
]]
--- @include "jobs"
local T = tubes_from(3)[1]
local node, delta = ARGV[1], ARGV[2]
if delta == 'drop' then
  redis.call('HDEL', T.refs, node)
elseif tonumber(delta) > 0 then
  ensure_tube(T)
  redis.call('HINCRBY', T.refs, node, delta)
  return 1
elseif redis.call('HINCRBY', T.refs, node, delta) <= 0 then
  redis.call('HDEL', T.refs, node)
end
if collect_tube(T, now_ms()) then return 0 end
return 1
