-- Record the ttlMs that the fenced stores on a prefix keep data with, when the first one comes,
-- and answer the one recorded: a store with another one is refused (src/fencing/store.ts).
-- KEYS[1] the prefix's record (kept for good: one key per prefix)
-- ARGV ttlMs (0 = kept without)
-- Reply {ttlMs recorded}
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return {tonumber(redis.call('GET', KEYS[1]))}
