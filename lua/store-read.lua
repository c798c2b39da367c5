-- Read a resource's value and the highest fence it has seen.
-- KEYS[1] resource hash {value, fence}
-- Reply {fence (0 when none), 'v:' .. value} or {fence} when no value was written.
local key = KEYS[1]
local cur = redis.call('HMGET', key, 'fence', 'value')
local highest = tonumber(cur[1]) or 0
if cur[2] then return {highest, 'v:' .. cur[2]} end
return {highest}
