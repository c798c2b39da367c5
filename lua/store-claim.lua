-- Register a fence at a resource before a read-modify-write, and read it in the same step.
-- KEYS[1] resource hash {value, fence}
-- ARGV fence (canonical decimal), ttlMs (0 = keep no TTL)
-- Reply {1, fence, value|false} when accepted, {0, highest} when the fence is stale.
local fence = ARGV[1]
-- Checked here too: one malformed fence stored would outrank every honest holder forever.
if not string.match(fence, '^[1-9][0-9]*$') or #fence > 16 or tonumber(fence) > 9007199254740991 then
  return redis.error_reply('ERR fencelock: malformed fence')
end
local cur = redis.call('HMGET', KEYS[1], 'fence', 'value')
local highest = tonumber(cur[1] or '0')
if tonumber(fence) < highest then
  return {0, highest}
end
redis.call('HSET', KEYS[1], 'fence', fence)
local ttlMs = tonumber(ARGV[2])
if ttlMs > 0 then redis.call('PEXPIRE', KEYS[1], ttlMs) end
-- The prefix keeps a client's automatic JSON parsing away from the value.
if cur[2] then return {1, tonumber(fence), 'v:' .. cur[2]} end
return {1, tonumber(fence)}
