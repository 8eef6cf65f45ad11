-- Extends one holder's slot. A holder whose expiry has passed has lost its
-- slot even if no script has reaped it yet; it is removed, not extended.
-- KEYS: see semaphore_common.lua
-- ARGV[1] holder token
-- ARGV[2] ttl, milliseconds
-- ARGV[3] fence counter retention, milliseconds
-- Returns 1 when extended, 0 when ARGV[1] holds no slot.
local now = now_ms()
local exp = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not exp then
  return 0
end
if exp <= now then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
keep(now, ARGV[3])
return 1
