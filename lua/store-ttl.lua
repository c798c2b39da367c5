-- Record the ttlMs that the fenced stores on a prefix keep data with, when the first one comes,
-- and answer the one recorded: a store with another one is refused (src/fencing/store.ts).
-- KEYS[1] the prefix's record (kept for good: one key per prefix)
-- Reply {ttlMs recorded}
local record = KEYS[1]
-- 0: kept without.
local ttlMs = ARGV[1]
redis.call('SET', record, ttlMs, 'NX')
return {tonumber(redis.call('GET', record))}
