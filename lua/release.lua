-- Give back one hold. The last hold deletes the lock, and hands it straight to the longest
-- waiter when that waiter listens for push wake-ups: it learns from the message that it
-- holds the lock, which saves the request it would otherwise send to take it.
-- KEYS[1] lock hash, KEYS[2] fence hash, KEYS[3] queue zset, KEYS[4] alive zset,
-- KEYS[5] this lease's release records (one hash per fence: 'owner' once the last hold went,
--         and each earlier release's id)
-- ARGV owner, fence, requestId, retryWindowMs (how long a retry of this release may still come)
-- Reply {1, holdsLeft} when this call (or an earlier try of it) released, {0, 0} when
-- the lease had already expired or changed hands.
local lock, fenceKey, queue, alive, released = unpack(KEYS)
local owner, fence, seen, retryWindowMs = ARGV[1], ARGV[2], 'q:' .. ARGV[3], ARGV[4]
local cur = redis.call('HMGET', lock, 'owner', 'fence', 'holds', seen)
if cur[1] == owner and cur[2] == fence then
  local holds = tonumber(cur[3])
  -- A retry of a release that already gave back one of several holds.
  if cur[4] then
    return {1, holds}
  end
  if holds > 1 then
    -- Remembered outside the lock, which leave.lua or the TTL may delete with the mark below in
    -- it, by this release's id (random, known only to its lease), beside the other releases of
    -- this lease. Written first, as below.
    redis.call('HSET', released, seen, 1)
    redis.call('PEXPIRE', released, retryWindowMs)
    -- Marked in the lock, for as long as it stands: however late a retry, while other holds
    -- remain it must not give back a second one.
    redis.call('HSET', lock, seen, 1)
    return {1, redis.call('HINCRBY', lock, 'holds', -1)}
  end
  -- Remembered, under this lease's fence, so that a retry of this release (or of any release of
  -- this lease's, a resumed copy's too) reports "released" however many leases came and went
  -- before it. Its retries come within the window. Written first: without its key (KEYS[5]) the
  -- script fails here, before it has changed anything.
  redis.call('HSET', released, 'owner', owner)
  redis.call('PEXPIRE', released, retryWindowMs)
  redis.call('DEL', lock)
  -- An empty queue is a missing key: the uncontended path skips the handover.
  if redis.call('EXISTS', queue) == 1 then
    local t = redis.call('TIME')
    local nowUs = t[1] * 1000000 + t[2]
    local nowMs = math.floor(nowUs / 1000)
    -- Waiters that stopped asking (crashed) lose their place, and are never handed the lock.
    local gone = redis.call('ZRANGEBYSCORE', alive, '-inf', nowMs, 'LIMIT', 0, 100)
    if #gone > 0 then
      redis.call('ZREM', queue, unpack(gone))
      redis.call('ZREM', alive, unpack(gone))
    end
    -- A push waiter queues as 'ticket.owner.leaseMs.fenceTtlMs' (the heir's, as acquire.lua takes
    -- them); a polling one as its ticket alone, and finds the lock free on its next look.
    local head = redis.call('ZRANGE', queue, 0, 0)[1] or ''
    local ticket, heir, leaseMs, fenceTtlMs = string.match(head, '^(%x+)%.(%x+)%.(%d+)%.(%d+)$')
    -- Only to a waiter still asking: the sweep takes at most 100, and a place evicted from alive
    -- says nothing of when its waiter stopped. Handed the lock, one that stopped would hold it
    -- for its whole lease; passed over, it leaves the lock free for the next look of those behind.
    local last = tonumber(redis.call('HGET', fenceKey, 'last')) or 0
    local minted = math.max(last + 1, nowUs)
    -- As acquire.lua: never a fence more than 1 s ahead of this clock.
    if ticket and minted <= nowUs + 1000000 and tonumber(redis.call('ZSCORE', alive, head) or 0) > nowMs then
      -- Taken as acquire.lua takes it, marked with the waiter's ticket so that its own next
      -- attempt (the message was lost) finds it held, and leave.lua can give it back.
      local newFence = string.format('%d', minted)
      redis.call('HSET', lock, 'owner', heir, 'fence', newFence, 'holds', 1, 'q:' .. head, 1)
      redis.call('PEXPIRE', lock, leaseMs)
      redis.call('HSET', fenceKey, 'last', newFence)
      redis.call('PEXPIRE', fenceKey, fenceTtlMs)
      redis.call('ZREM', queue, head)
      redis.call('ZREM', alive, head)
      -- Published on the heir's own channel, the SHA-1 of the lock key and its ticket (pushWaiter in
      -- src/waiting/push.ts): safe in a URL path and an event line, and no other waiter's stream carries
      -- it. The digest with the heir's secret owner token proves the message came from here.
      redis.call('PUBLISH', redis.sha1hex(lock) .. '.' .. ticket, newFence .. ':' .. redis.sha1hex(newFence .. ':' .. heir))
    end
  end
  return {1, 0}
end
-- By owner too: a lease with the right fence and another owner was never released.
local record = redis.call('HMGET', released, 'owner', seen)
if record[1] == owner or record[2] then
  return {1, 0}
end
return {0, 0}
