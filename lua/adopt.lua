-- Quorum mode: make sure this node never mints the quorum's fence or a lower one again, and give
-- this node's hold that fence when the call that took the hold here asks.
-- KEYS[1] lock hash {..., prior, carried}, KEYS[2] fence hash
-- ARGV owner, ticket (of the attempt that took the hold), the fence this node gave that hold,
--      the quorum's fence, fenceTtlMs, holds (the lease's count on the other nodes; optional)
-- Reply {1, ttlMs} when the hold carries the quorum's fence, {0, 0} when it is not this call's
-- (busy, or lapsed): the last fence is raised all the same.
local lock, fenceKey = unpack(KEYS)
-- Checked before any write, as in acquire.lua.
for i = 5, 5 do
  if not (string.match(ARGV[i], '^[1-9]%d*$') or ARGV[i] == '0') or #ARGV[i] > 12 then
    return redis.error_reply('ERR fencelock: malformed TTL argument')
  end
end
local owner, ticket, minted, chosen = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local fenceTtlMs = tonumber(ARGV[5])
-- Raising the last fence only ever makes later fences higher, so it needs no ownership: the more
-- nodes carry it, the more of them may lose their data without a fence going back.
local fence = tonumber(chosen)
local last = tonumber(redis.call('HGET', fenceKey, 'last')) or 0
if last < fence then
  redis.call('HSET', fenceKey, 'last', chosen)
  last = fence
end
-- Whatever this clock says, the fence stays known until it has passed it: the time floor then
-- takes over.
local t = redis.call('TIME')
local keepMs = fenceTtlMs + math.max(0, math.ceil((last - (t[1] * 1000000 + t[2])) / 1000))
if redis.call('PTTL', fenceKey) < keepMs then
  redis.call('PEXPIRE', fenceKey, keepMs)
end
local cur = redis.call('HMGET', lock, 'owner', 'fence', 'q:' .. ticket, 'prior')
-- A retry finds the chosen fence already set. A node that knew a later fence than the lease's before
-- it minted this hold (the hold came late: a repair or a grant held up while another lease was
-- taken) must not give the hold the lease's fence: the caller gives the hold back.
if cur[1] ~= owner or not cur[3] or (cur[2] ~= minted and cur[2] ~= chosen) or (tonumber(cur[4]) or 0) > fence then
  return {0, 0}
end
-- 'carried': the latest fence the hold may be below, its own mint here (a reentrant call keeps its
-- lease's fence): acquire.lua tells a stale hold by a later one, so none minted since may count.
redis.call('HSET', lock, 'fence', chosen, 'carried', string.format('%d', math.max(fence, tonumber(minted))))
-- A hold served afresh for a reentrant call counts as the lease's others do: releasing one of
-- two holds must not take the lock off this node alone.
local holds = tonumber(ARGV[6] or 0)
if holds > tonumber(redis.call('HGET', lock, 'holds')) then
  redis.call('HSET', lock, 'holds', holds)
end
return {1, redis.call('PTTL', lock)}
