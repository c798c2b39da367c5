-- Quorum mode: give this node's hold the fence the quorum chose, and make sure this node never mints
-- that fence or a lower one again. Only the call that took the hold here can change it.
-- KEYS[1] lock hash, KEYS[2] fence hash
-- ARGV owner, ticket (of the attempt that took the hold), the fence this node gave that hold,
--      the quorum's fence, fenceTtlMs
-- Reply {1, ttlMs} when the hold carries the quorum's fence, {0, 0} when it is not this call's.
local lock, fenceKey = unpack(KEYS)
local owner, ticket, minted, chosen = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local fenceTtlMs = tonumber(ARGV[5])
local cur = redis.call('HMGET', lock, 'owner', 'fence', 'q:' .. ticket)
-- A retry finds the chosen fence already set.
if cur[1] ~= owner or not cur[3] or (cur[2] ~= minted and cur[2] ~= chosen) then
  return {0, 0}
end
redis.call('HSET', lock, 'fence', chosen)
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
return {1, redis.call('PTTL', lock)}
