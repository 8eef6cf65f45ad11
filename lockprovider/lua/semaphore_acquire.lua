-- Admits a holder into a counting semaphore, or confirms it already holds a
-- slot. Reaping expired holders, checking the limit and admitting happen in
-- this one script, on the server's clock: no race between round trips.
-- KEYS: see semaphore_common.lua
-- ARGV[1] holder token
-- ARGV[2] ttl, milliseconds
-- ARGV[3] limit
-- ARGV[4] "1": wait in the FIFO queue when full; "0": try once
-- ARGV[5] waiter ttl, milliseconds (a waiter that stops polling leaves the queue)
-- ARGV[6] fence counter retention, milliseconds
-- Returns {1, fencing token} when ARGV[1] holds a slot;
--         {0, position} when not admitted (1-based place among those still
--         waiting for a slot, 0 when not queued);
--         {-1, limit} when the current holders agreed on another limit.
local now, now_us = fence_clock()
local token, ttl, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
reap(now)
local held = redis.call('ZCARD', KEYS[1])
local stored = tonumber(redis.call('HGET', KEYS[5], 'limit'))
if stored and stored ~= limit and held > 0 then
  return {-1, stored}
end
redis.call('HSET', KEYS[5], 'limit', limit)

if redis.call('ZSCORE', KEYS[1], token) then
  redis.call('ZADD', KEYS[1], now + ttl, token)
  keep(now, ARGV[6])
  return {1, tonumber(redis.call('HGET', KEYS[2], token))}
end

local free = limit - held
if ARGV[4] == '1' then
  if not redis.call('ZSCORE', KEYS[3], token) then
    local ticket = redis.call('HINCRBY', KEYS[5], 'ticket', 1)
    redis.call('ZADD', KEYS[3], ticket, token)
  end
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[5]), token)
  local rank = redis.call('ZRANK', KEYS[3], token)
  if rank >= free then
    keep(now, ARGV[6])
    local ahead = rank - free + 1
    if ahead < 1 then ahead = 1 end
    return {0, ahead}
  end
  redis.call('ZREM', KEYS[3], token)
  redis.call('ZREM', KEYS[4], token)
elseif redis.call('ZCARD', KEYS[3]) >= free then
  -- A try-once acquire never jumps ahead of queued waiters.
  return {0, 0}
end

local f = next_fence(KEYS[6], ARGV[6], now, now_us)
redis.call('ZADD', KEYS[1], now + ttl, token)
redis.call('HSET', KEYS[2], token, int(f))
keep(now, ARGV[6])
return {1, f}
