-- Record the ttlMs that the fenced stores on a prefix keep data with, when the first one comes,
-- and answer the one recorded: a store with another one is refused (src/fencing/store.ts).
-- KEYS[1] the prefix's record (kept for good: one key per prefix)
-- Reply {ttlMs recorded}
local record = KEYS[1]
-- 0: kept without.
local ttlMs = ARGV[1]
-- Checked before it is kept for good: text here would fail every store on the prefix.
for i = 1, 1 do
  if not (string.match(ARGV[i], '^[1-9]%d*$') or ARGV[i] == '0') or #ARGV[i] > 12 then
    return redis.error_reply('ERR fencelock: malformed TTL argument')
  end
end
redis.call('SET', record, ttlMs, 'NX')
return {tonumber(redis.call('GET', record))}
