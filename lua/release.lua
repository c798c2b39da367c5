-- Give back one hold; the last hold deletes the lock.
-- KEYS[1] lock hash, KEYS[2] fence hash, KEYS[3] queue zset
-- ARGV owner, fence, requestId, wake channel
-- Reply {1, holdsLeft} when this call (or an earlier try of it) released, {0} when
-- the lease had already expired or changed hands.
local lock, fenceKey = KEYS[1], KEYS[2]
local owner, fence, seen = ARGV[1], ARGV[2], 'q:' .. ARGV[3]
local cur = redis.call('HMGET', lock, 'owner', 'fence', 'holds', seen)
if cur[1] == owner and cur[2] == fence then
  local holds = tonumber(cur[3])
  -- A retry of a release that already gave back one of several holds.
  if cur[4] then
    return {1, holds}
  end
  if holds > 1 then
    redis.call('HSET', lock, seen, 1)
    return {1, redis.call('HINCRBY', lock, 'holds', -1)}
  end
  redis.call('DEL', lock)
  -- Remembered so that a retry of this release reports "released", not "expired".
  redis.call('HSET', fenceKey, 'released', fence)
  -- The longest waiter, if it listens for push wake-ups, tries at once instead of sleeping.
  -- The prefix keeps a client's JSON parsing from turning an all-digit ticket into a number.
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if head then redis.call('PUBLISH', ARGV[4], 't:' .. head) end
  return {1, 0}
end
if redis.call('HGET', fenceKey, 'released') == fence then
  return {1, 0}
end
return {0}
