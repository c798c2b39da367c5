-- Take a waiter out of line when it stops waiting, so it holds no free lock back, and give back
-- any hold taken for it that it never received (a handover, or a reply lost or too late); the
-- next in line finds the lock free on its next look, within a second.
-- Sent only as an acquire() call ends, so a late duplicate finds no hold that anyone received.
-- KEYS[1] lock hash, KEYS[2] fence hash (unused), KEYS[3] queue zset, KEYS[4] alive zset
local lock, queue, alive = KEYS[1], KEYS[3], KEYS[4]
-- As queued.
local ticket = ARGV[1]
redis.call('ZREM', queue, ticket)
redis.call('ZREM', alive, ticket)
-- HDEL answers 1 only once: a retry of this call gives back nothing more.
if redis.call('HDEL', lock, 'q:' .. ticket) == 1 and redis.call('HINCRBY', lock, 'holds', -1) < 1 then
  redis.call('DEL', lock)
end
return {1}
