-- Extend a lease; never revives one that has expired or changed hands.
-- KEYS[1] lock hash, KEYS[2] fence hash
-- Reply {1, ttlMs} when extended (or already longer), {0, 0} when the caller no longer holds it.
local lock, fenceKey = unpack(KEYS)
local owner = ARGV[1]
-- Compared as the string it is stored as.
local fence = ARGV[2]
local leaseMs = tonumber(ARGV[3])
-- A string: PEXPIRE is all it is used for.
local fenceTtlMs = ARGV[4]
local cur = redis.call('HMGET', lock, 'owner', 'fence')
if cur[1] ~= owner or cur[2] ~= fence then
  return {0, 0}
end
-- Never shortened: another hold (a join, or a resumed lease with its own leaseMs) may trust the
-- longer TTL, and cutting it would let a second holder in.
local ttl = redis.call('PTTL', lock)
if ttl < leaseMs then
  redis.call('PEXPIRE', lock, leaseMs)
  redis.call('PEXPIRE', fenceKey, fenceTtlMs)
  ttl = leaseMs
end
return {1, ttl}
