-- Read the state of a lock without revealing its owner.
-- KEYS[1] lock hash, KEYS[2] fence hash, KEYS[3] queue zset
-- Reply {held (0|1), fence (0 when none), ttlMs, holds, waiters}.
local lock, fenceKey, queue = unpack(KEYS)
local cur = redis.call('HMGET', lock, 'owner', 'fence', 'holds')
local waiters = redis.call('ZCARD', queue)
if not cur[1] then
  local last = tonumber(redis.call('HGET', fenceKey, 'last')) or 0
  return {0, last, 0, 0, waiters}
end
return {1, tonumber(cur[2]), redis.call('PTTL', lock), tonumber(cur[3]), waiters}
