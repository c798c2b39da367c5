-- Claim a fence at a resource before a read-modify-write, and read the value in the same step;
-- or, given a value, store it. Either only when the fence is at least the highest seen.
-- KEYS[1] resource hash {value, fence}
-- ARGV fence (canonical decimal), ttlMs (0 = keep no TTL), value (absent for a claim)
-- Reply {1, fence, 'v:' .. value} when a claim is accepted and a value exists, {1, fence} when
-- accepted otherwise, {0, highest} when the fence is stale.
local key, fence, ttlMs, value = KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3]
local number = tonumber(fence)
-- Checked here too: one malformed fence stored would outrank every honest holder forever.
-- (Any 17 digits or more are above 2^53 - 1 even as a rounded double.)
if not string.match(fence, '^[1-9][0-9]*$') or number > 9007199254740991 then
  return redis.error_reply('ERR fencelock: malformed fence')
end
local cur = redis.call('HMGET', key, 'fence', 'value')
local highest = tonumber(cur[1] or '0')
if not cur[1] and ttlMs > 0 then
  -- An expiring record takes the highest fence it saw with it once idle for ttlMs. Every fence
  -- seen before was minted (server time in µs) before then, so a fence that old is refused.
  local t = redis.call('TIME')
  highest = t[1] * 1000000 + t[2] - ttlMs * 1000
end
if number < highest then
  return {0, highest}
end
if value then
  redis.call('HSET', key, 'fence', fence, 'value', value)
else
  redis.call('HSET', key, 'fence', fence)
end
if ttlMs > 0 then redis.call('PEXPIRE', key, ttlMs) end
-- The prefix keeps a client's automatic JSON parsing away from the value.
if cur[2] and not value then return {1, number, 'v:' .. cur[2]} end
return {1, number}
