-- Claim a fence at a resource before a read-modify-write, and read the value in the same step;
-- or, given a value, store it. Either only when the fence is at least the highest seen. Without
-- a fence (''), only read: the value and the highest fence seen, claiming nothing.
-- KEYS[1] resource hash {value, fence}, KEYS[2] this call's write record (one key per write)
-- Reply {1, fence, 'v:' .. value} when accepted, or read, and a value exists (none is sent back
-- for a write), {1, fence} when accepted otherwise, {0, highest} when the fence is stale. The
-- fence is the highest seen, which an accepted one now is.
local key, written = unpack(KEYS)
-- Canonical decimal, or ''.
local fence = ARGV[1]
-- 0: keep no TTL.
local ttlMs = tonumber(ARGV[2])
-- Checked before any write, as the fence below.
for i = 2, 2 do
  if not (string.match(ARGV[i], '^[1-9]%d*$') or ARGV[i] == '0') or #ARGV[i] > 12 then
    return redis.error_reply('ERR fencelock: malformed TTL argument')
  end
end
-- How long a retry of this write may still come.
local retryWindowMs = ARGV[3]
-- Absent for a claim or a read.
local value = ARGV[4]
local cur = redis.call('HMGET', key, 'fence', 'value')
local highest = tonumber(cur[1]) or 0
if fence ~= '' or value then
  local number = tonumber(fence)
  local t = redis.call('TIME')
  local nowUs = t[1] * 1000000 + t[2]
  -- Checked here too, whoever runs this script: a malformed or forged fence stored would outrank
  -- every honest holder. Callers refuse an hour ahead by their own clock; 70 minutes here leaves
  -- a caller up to 10 minutes ahead of Redis their clear error. Far below 2^53, where digits get lost.
  if not string.match(fence, '^[1-9][0-9]*$') or number > nowUs + 4200000000 then
    return redis.error_reply('ERR fencelock: malformed fence, or one 70 min ahead of the Redis clock')
  end
  -- A retry of an applied write answers as it did and changes nothing: the next holder may have
  -- claimed since, or this one written again. Looked up for a claim too: an old-layout call (no
  -- KEYS[2], its value where the window goes) fails here, having changed nothing.
  if redis.call('GET', written) == fence and value then
    return {1, number}
  end
  if not cur[1] and ttlMs > 0 then
    -- A record idle for ttlMs expired with its highest fence. Every fence it saw was minted
    -- before then, at most τ (1 s) ahead of the clock: all of them are below this.
    highest = nowUs - ttlMs * 1000 + 1000000
  end
  if number < highest then
    return {0, highest}
  end
  if value then
    -- Written first: with a window Redis refuses, the script fails before storing anything.
    redis.call('SET', written, fence, 'PX', retryWindowMs)
    redis.call('HSET', key, 'fence', fence, 'value', value)
  else
    redis.call('HSET', key, 'fence', fence)
  end
  -- Without ttlMs the record is kept, even if a store with one gave it a TTL before.
  if ttlMs > 0 then redis.call('PEXPIRE', key, ttlMs) else redis.call('PERSIST', key) end
  highest = number
end
-- The prefix keeps a client's automatic JSON parsing away from the value.
if cur[2] and not value then return {1, highest, 'v:' .. cur[2]} end
return {1, highest}
