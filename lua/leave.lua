-- Take a waiter out of the queue when it stops waiting (gave up or was aborted), so a free
-- lock is not held back for it until its ticket expires.
-- KEYS[1] lock hash, KEYS[2] fence hash (unused), KEYS[3] queue zset, KEYS[4] alive zset
-- ARGV ticket
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
return {1}
