-- Extend a lease; never revives one that has expired or changed hands.
-- KEYS[1] lock hash, KEYS[2] fence hash
-- ARGV owner, fence, leaseMs, fenceTtlMs
-- Reply {1, ttlMs} when extended (or already longer), {0, 0} when the caller no longer holds it.
local lock, fenceKey = unpack(KEYS)
local cur = redis.call('HMGET', lock, 'owner', 'fence')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  return {0, 0}
end
-- Never shortened: another hold of this lock (a reentrant join or a resumed lease, each with
-- its own leaseMs) may trust the longer TTL, and cutting it would let a second holder in.
local leaseMs, fenceTtlMs = tonumber(ARGV[3]), ARGV[4]
local ttl = redis.call('PTTL', lock)
if ttl < leaseMs then
  redis.call('PEXPIRE', lock, leaseMs)
  redis.call('PEXPIRE', fenceKey, fenceTtlMs)
  ttl = leaseMs
end
return {1, ttl}
