-- Read a resource's value and the highest fence it has seen.
-- KEYS[1] resource hash {value, fence}
-- Reply {fence (0 when none), 'v:' .. value} or {fence} when no value was written.
local cur = redis.call('HMGET', KEYS[1], 'fence', 'value')
local fence = tonumber(cur[1] or '0')
if cur[2] then return {fence, 'v:' .. cur[2]} end
return {fence}
