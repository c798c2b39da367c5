-- Extend a lease; never revives one that has expired or changed hands.
-- KEYS[1] lock hash, KEYS[2] fence hash
-- Reply {1, ttlMs, holds} when extended (or already longer), {0, 0, 0} when the caller no longer
-- holds it. Quorum mode repairs a node with the holds the others count.
local lock, fenceKey = unpack(KEYS)
-- Checked before any write, as in acquire.lua.
for i = 3, 4 do
  if not (string.match(ARGV[i], '^[1-9]%d*$') or ARGV[i] == '0') or #ARGV[i] > 12 then
    return redis.error_reply('ERR fencelock: malformed TTL argument')
  end
end
local owner = ARGV[1]
-- Compared as the string it is stored as.
local fence = ARGV[2]
local leaseMs = tonumber(ARGV[3])
local fenceTtlMs = tonumber(ARGV[4])
local cur = redis.call('HMGET', lock, 'owner', 'fence', 'holds')
if cur[1] ~= owner or cur[2] ~= fence then
  return {0, 0, 0}
end
-- Never shortened: another hold (a join, or a resumed lease with its own leaseMs) may trust the
-- longer TTL, and cutting it would let a second holder in.
local ttl = redis.call('PTTL', lock)
if ttl < leaseMs then
  redis.call('PEXPIRE', lock, leaseMs)
  -- Never shortened: in quorum mode it may have to outlive a fence minted ahead of this clock.
  if redis.call('PTTL', fenceKey) < fenceTtlMs then redis.call('PEXPIRE', fenceKey, fenceTtlMs) end
  ttl = leaseMs
end
return {1, ttl, tonumber(cur[3])}
