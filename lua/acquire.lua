-- Acquire a lease, or join it reentrantly when the caller already owns it.
-- KEYS[1] lock hash {owner, fence, holds, q:<requestId>...}
-- KEYS[2] fence hash {last, released}
-- ARGV owner, requestId, leaseMs, fenceTtlMs
-- Reply {1, fence, holds, ttlMs} when held by the caller, {0, ttlMs} when busy.
local lock, fenceKey = KEYS[1], KEYS[2]
local owner, seen = ARGV[1], 'q:' .. ARGV[2]
local leaseMs, fenceTtlMs = tonumber(ARGV[3]), tonumber(ARGV[4])

local cur = redis.call('HMGET', lock, 'owner', 'fence', 'holds')
if cur[1] == false then
  -- The floor of server time keeps fences rising when the fence key was lost
  -- (failover, restart, expiry); +1 keeps them strictly rising within a microsecond.
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('HGET', fenceKey, 'last') or '0')
  local fence = string.format('%d', math.max(last + 1, now))
  redis.call('HSET', lock, 'owner', owner, 'fence', fence, 'holds', 1, seen, 1)
  redis.call('PEXPIRE', lock, leaseMs)
  redis.call('HSET', fenceKey, 'last', fence)
  redis.call('PEXPIRE', fenceKey, fenceTtlMs)
  return {1, tonumber(fence), 1, leaseMs}
end

if cur[1] ~= owner then
  return {0, redis.call('PTTL', lock)}
end

-- A retried request (same requestId) must not count a second hold.
local holds = tonumber(cur[3])
if redis.call('HSETNX', lock, seen, 1) == 1 then
  holds = redis.call('HINCRBY', lock, 'holds', 1)
end
local ttl = redis.call('PTTL', lock)
if ttl < leaseMs then
  redis.call('PEXPIRE', lock, leaseMs)
  redis.call('PEXPIRE', fenceKey, fenceTtlMs)
  ttl = leaseMs
end
return {1, tonumber(cur[2]), holds, ttl}
