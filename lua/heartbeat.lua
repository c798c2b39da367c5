-- Extend a lease; never revives one that has expired or changed hands.
-- KEYS[1] lock hash, KEYS[2] fence hash
-- ARGV owner, fence, leaseMs, fenceTtlMs
-- Reply {1, ttlMs} when extended, {0} when the caller no longer holds it.
local lock, fenceKey = KEYS[1], KEYS[2]
local cur = redis.call('HMGET', lock, 'owner', 'fence')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return {0}
end
local leaseMs = tonumber(ARGV[3])
redis.call('PEXPIRE', lock, leaseMs)
redis.call('PEXPIRE', fenceKey, ARGV[4])
return {1, leaseMs}
