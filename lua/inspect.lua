-- Read the state of a lock without revealing its owner.
-- KEYS[1] lock hash, KEYS[2] fence hash
-- Reply {held (0|1), fence (0 when none), ttlMs, holds}.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'holds')
if cur[1] == false then
  local last = redis.call('HGET', KEYS[2], 'last')
  return {0, tonumber(last or '0'), 0, 0}
end
return {1, tonumber(cur[2]), redis.call('PTTL', KEYS[1]), tonumber(cur[3])}
