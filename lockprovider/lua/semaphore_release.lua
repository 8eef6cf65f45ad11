-- Frees one holder's slot, or takes a waiter out of the queue.
-- KEYS: see semaphore_common.lua
-- ARGV[1] holder token
-- Returns 1 when a live slot was freed, 0 otherwise (not held, or expired).
local now = now_ms()
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
local exp = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not exp then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if exp <= now then
  return 0
end
return 1
