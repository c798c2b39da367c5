-- Store a value iff its fence is at least the highest the resource has seen.
-- KEYS[1] resource hash {value, fence}
-- ARGV fence (canonical decimal), value, ttlMs (0 = keep no TTL)
-- Reply {1, fence} when accepted, {0, highest} when the fence is stale.
local fence = ARGV[1]
if not string.match(fence, '^[1-9][0-9]*$') or #fence > 16 or tonumber(fence) > 9007199254740991 then
  return redis.error_reply('ERR fencelock: malformed fence')
end
local highest = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if tonumber(fence) < highest then
  return {0, highest}
end
redis.call('HSET', KEYS[1], 'fence', fence, 'value', ARGV[2])
local ttlMs = tonumber(ARGV[3])
if ttlMs > 0 then redis.call('PEXPIRE', KEYS[1], ttlMs) end
return {1, tonumber(fence)}
