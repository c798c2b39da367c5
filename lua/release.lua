-- Give back one hold. The last hold deletes the lock, and hands it straight to the longest
-- waiter when that waiter listens for push wake-ups: it learns from the message that it
-- holds the lock, which saves the request it would otherwise send to take it.
-- KEYS[1] lock hash, KEYS[2] fence hash, KEYS[3] queue zset, KEYS[4] alive zset,
-- KEYS[5] this lease's release records (one hash per fence: 'owner' once the last hold went,
--         and each earlier release's id)
-- Reply {1, holdsLeft} when this call (or an earlier try of it) released, {0, 0} when
-- the lease had already expired or changed hands.
local lock, fenceKey, queue, alive, released = unpack(KEYS)
local owner = ARGV[1]
local fence = ARGV[2]
-- This release's id (random, known only to its lease), as a field name.
local seen = 'q:' .. ARGV[3]
-- How long a retry of this release may still come.
local retryWindowMs = ARGV[4]
-- Checked before any write, as in acquire.lua: a record Redis gave no TTL would stay for good.
for i = 4, 4 do
  if not (string.match(ARGV[i], '^[1-9]%d*$') or ARGV[i] == '0') or #ARGV[i] > 12 then
    return redis.error_reply('ERR fencelock: malformed TTL argument')
  end
end
local cur = redis.call('HMGET', lock, 'owner', 'fence', 'holds', seen)
if cur[1] == owner and cur[2] == fence then
  local holds = tonumber(cur[3])
  -- A retry of a release that already gave back one of several holds.
  if cur[4] then
    return {1, holds}
  end
  if holds > 1 then
    -- Also remembered outside the lock, which leave.lua or the TTL may delete. Written first, as below.
    redis.call('HSET', released, seen, 1)
    redis.call('PEXPIRE', released, retryWindowMs)
    -- Marked in the lock while it stands: a retry, however late, must not give back a second hold.
    redis.call('HSET', lock, seen, 1)
    return {1, redis.call('HINCRBY', lock, 'holds', -1)}
  end
  -- Remembered under this lease's fence, so that a retry of any of its releases (a resumed copy's
  -- too) reports "released" whatever came since. Written first: without KEYS[5] the script fails
  -- here, having changed nothing.
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
    -- A push waiter queues as 'ticket.owner.leaseMs.fenceTtlMs.lockSet' (the heir's, as acquire.lua
    -- takes them, and its lock set's id), '.s' added where it listens on a shard channel; a polling
    -- one as its ticket alone, and finds the lock free on its next look. Its numbers as acquire.lua
    -- checks them: a leaseMs PEXPIRE refused would leave the heir's lock with no TTL.
    local head = redis.call('ZRANGE', queue, 0, 0)[1] or ''
    local ticket, heir, leaseMs, fenceTtlMs, lockSet, shard = string.match(head, '^(%x+)%.(%x+)%.([1-9]%d*)%.([1-9]%d*)%.(%x+)(%.?s?)$')
    local last = tonumber(redis.call('HGET', fenceKey, 'last')) or 0
    local minted = math.max(last + 1, nowUs)
    -- As acquire.lua: never a fence over 1 s ahead of this clock. Only to a head still asking (the
    -- sweep stops at 100, an evicted place tells nothing): one that stopped would hold a whole lease.
    if ticket and #leaseMs < 13 and #fenceTtlMs < 13 and minted <= nowUs + 1000000 and tonumber(redis.call('ZSCORE', alive, head) or 0) > nowMs then
      -- Taken as acquire.lua takes it, marked with the waiter's ticket so that its own next
      -- attempt (the message was lost) finds it held, and leave.lua can give it back.
      local newFence = string.format('%d', minted)
      redis.call('HSET', lock, 'owner', heir, 'fence', newFence, 'holds', 1, 'q:' .. head, 1)
      redis.call('PEXPIRE', lock, leaseMs)
      redis.call('HSET', fenceKey, 'last', newFence)
      redis.call('PEXPIRE', fenceKey, fenceTtlMs)
      redis.call('ZREM', queue, head)
      redis.call('ZREM', alive, head)
      -- On the heir's channel (src/waiting/wake-channels.ts), addressed by ticket; the digest with
      -- the secret owner token proves the message came from here.
      local message = ticket .. ':' .. newFence .. ':' .. redis.sha1hex(newFence .. ':' .. heir)
      -- pcall: where the message cannot go (no SPUBLISH on Redis 6, an ACL user without channel
      -- rights) the heir finds its lock on its next look, as after a lost message. An error here
      -- would fail a release whose writes above stand.
      if shard == '.s' then
        -- Redis Cluster: named by the lock key from its hash tag on, so in this node's slot, and the
        -- same whatever key prefix a client adds.
        redis.pcall('SPUBLISH', 'fencelock.' .. lockSet .. ':' .. string.sub(lock, string.find(lock, '{', 1, true) or 1), message)
      else
        redis.pcall('PUBLISH', 'fencelock.' .. lockSet, message)
      end
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
