-- Read the state of a lock without revealing its owner.
-- KEYS[1] lock hash, KEYS[2] fence hash, KEYS[3] queue zset
-- Reply {held (0|1), fence (0 when none), ttlMs, holds, waiters}.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'holds')
local waiters = redis.call('ZCARD', KEYS[3])
if cur[1] == false then
  local last = redis.call('HGET', KEYS[2], 'last')
  return {0, tonumber(last or '0'), 0, 0, waiters}
end
return {1, tonumber(cur[2]), redis.call('PTTL', KEYS[1]), tonumber(cur[3]), waiters}
