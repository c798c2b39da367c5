-- Acquire a lease, or join it reentrantly when the caller already owns it. Waiters queue
-- in arrival order, so a free lock goes to the longest waiter, not to whoever asks first.
-- KEYS[1] lock hash {owner, fence, holds, prior and carried (quorum mode, see adopt.lua), q:<ticket>...}
-- KEYS[2] fence hash {last}: the last fence minted
-- KEYS[3] queue zset (ticket -> arrival, µs), KEYS[4] alive zset (ticket -> expiry, ms)
-- Reply (always four integers) {1, fence, holds, ttlMs} when held by the caller,
--       {0, ttlMs, position, newest} when busy. ttlMs 0: free but promised to an earlier waiter;
--       below 0: free once the clock passes the last fence, in -ttlMs. position: in the queue, -1
--       when not queued. newest: no lower than any fence minted yet, so a push waiter can tell a
--       handover after this attempt from one before it (which has lapsed).
local lock, fenceKey, queue, alive = unpack(KEYS)
local owner = ARGV[1]
-- The call's request id; a push waiter's adds '.owner.leaseMs.fenceTtlMs.lockSet[.s]' for release.lua.
local ticket = ARGV[2]
local seen = 'q:' .. ticket
-- Also kept as sent, for PEXPIRE to take as text (see below).
local leaseMsText, fenceTtlMsText = ARGV[3], ARGV[4]
local leaseMs, fenceTtlMs = tonumber(leaseMsText), tonumber(fenceTtlMsText)
-- How long the ticket stays queued without another attempt; 0: do not queue.
local queueMs = tonumber(ARGV[5])
-- Checked before any write, whoever runs this script: a TTL Redis refused halfway would leave a lock
-- that never expires. Decimal as PEXPIRE reads them, under 1e12. Every script that sets a TTL has
-- these lines word for word (a loop even for one argument), so gzip ships them once.
for i = 3, 5 do
  if not (string.match(ARGV[i], '^[1-9]%d*$') or ARGV[i] == '0') or #ARGV[i] > 12 then
    return redis.error_reply('ERR fencelock: malformed TTL argument')
  end
end
-- Quorum mode only: the fence the client proposes to every node (its clock), so that nodes that know
-- no higher one mint the same. It also lifts τ, the most a fence may run ahead of this clock: there
-- the majority keeps fences in order, and a slow clock must not hold the others back (docs/guarantees.md).
local proposed = tonumber(ARGV[6])
local maxAheadUs = proposed and math.huge or 1000000
local t = redis.call('TIME')
local nowUs = t[1] * 1000000 + t[2]
local nowMs = math.floor(nowUs / 1000)

-- An empty queue is a missing key: the uncontended path skips all queue upkeep.
local queued = redis.call('EXISTS', queue) == 1
if queued then
  -- Waiters that stopped asking (crashed, gave up) lose their place.
  local gone = redis.call('ZRANGEBYSCORE', alive, '-inf', nowMs, 'LIMIT', 0, 100)
  if #gone > 0 then
    redis.call('ZREM', queue, unpack(gone))
    redis.call('ZREM', alive, unpack(gone))
  end
end

-- A caller that holds the lock, taken or joined, waits no longer.
local function leaveLine()
  if queued then
    redis.call('ZREM', queue, ticket)
    redis.call('ZREM', alive, ticket)
  end
end

local function waitInLine(ttl, newest)
  if queueMs <= 0 then return {0, ttl, -1, newest} end
  redis.call('ZADD', queue, 'NX', nowUs, ticket)
  redis.call('ZADD', alive, nowMs + queueMs, ticket)
  -- Every waiter queues for the same time, so this never cuts another waiter's place short.
  redis.call('PEXPIRE', queue, queueMs)
  redis.call('PEXPIRE', alive, queueMs)
  return {0, ttl, redis.call('ZRANK', queue, ticket), newest}
end

local cur = redis.call('HMGET', lock, 'owner', 'fence', 'holds', 'carried')
-- Quorum mode: the caller's own hold is stale once this node has heard of a later fence than the
-- one the hold carries (another lease took a majority since): joining it would answer a fence from
-- before that lease. It goes, and the caller is served afresh.
if proposed and cur[1] == owner and (tonumber(redis.call('HGET', fenceKey, 'last')) or 0) > tonumber(cur[4] or cur[2]) then
  redis.call('DEL', lock)
  cur = {}
end
if not cur[1] then
  local last = tonumber(redis.call('HGET', fenceKey, 'last')) or 0
  -- The floor of server time keeps fences rising when the fence key was lost
  -- (failover, restart, expiry); +1 keeps them strictly rising within a microsecond. In quorum
  -- mode the client's proposed fence stands in for it, and this clock less an hour only backs it:
  -- a node keeps its last fence until its clock passes it by more than an hour (fence-ttl.ts).
  local minted = math.max(last + 1, proposed and math.max(proposed, nowUs - 3600000000) or nowUs)
  -- At most τ ahead of this clock, so a failover that loses this fence over τ (plus clock lag)
  -- later still mints above it. Until then: busy, for -ms, for everyone in line alike.
  if minted > nowUs + maxAheadUs then
    return waitInLine(-math.ceil((minted - nowUs - maxAheadUs) / 1000), last)
  end
  if queued then
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    -- A head evicted from alive would hold a free lock back for good (others' attempts keep the
    -- line alive): it goes, as does one past its time that the sweep (100 at most) missed.
    while head and head ~= ticket and tonumber(redis.call('ZSCORE', alive, head) or 0) <= nowMs do
      redis.call('ZREM', queue, head)
      head = redis.call('ZRANGE', queue, 0, 0)[1]
    end
    if head and head ~= ticket then
      -- Server time stands in for a fence key that was lost (see below).
      return waitInLine(0, math.max(last, nowUs))
    end
  end
  leaveLine()
  -- Numbers go to redis.call as text where they can: it formats a Lua number with %.17g, which
  -- took about 1 µs of an uncontended cycle (Redis 7.0).
  local newFence = string.format('%d', minted)
  if proposed then
    -- Quorum mode: also the last fence this node knew before this hold, which adopt.lua checks: a
    -- hold minted here after a later holder's fence must not take an earlier lease's fence.
    redis.call('HSET', lock, 'owner', owner, 'fence', newFence, 'holds', '1', seen, '1', 'prior', string.format('%d', last))
  else
    redis.call('HSET', lock, 'owner', owner, 'fence', newFence, 'holds', '1', seen, '1')
  end
  redis.call('PEXPIRE', lock, leaseMsText)
  redis.call('HSET', fenceKey, 'last', newFence)
  -- Kept fenceTtlMs past the moment this clock passes it: a fence minted ahead of the clock
  -- (quorum mode) stays known until the time floor is above it.
  local aheadMs = math.ceil((minted - nowUs) / 1000)
  redis.call('PEXPIRE', fenceKey, aheadMs > 0 and fenceTtlMs + aheadMs or fenceTtlMsText)
  return {1, minted, 1, leaseMs}
end

if cur[1] ~= owner then
  -- A lock without a TTL (PERSIST, restored data) answers -1, which would read as the clock's.
  return waitInLine(math.max(redis.call('PTTL', lock), 0), tonumber(cur[2]))
end

leaveLine()
-- A retried request (same ticket) must not count a second hold.
local holds = tonumber(cur[3])
if redis.call('HSETNX', lock, seen, 1) == 1 then
  holds = redis.call('HINCRBY', lock, 'holds', 1)
end
local ttl = redis.call('PTTL', lock)
if ttl < leaseMs then
  redis.call('PEXPIRE', lock, leaseMs)
  -- Never shortened, for the same reason.
  if redis.call('PTTL', fenceKey) < fenceTtlMs then redis.call('PEXPIRE', fenceKey, fenceTtlMs) end
  ttl = leaseMs
end
return {1, tonumber(cur[2]), holds, ttl}
