-- Leaves one level of a reentrant mutex; the last level deletes the key.
-- Only the owner may do so.
-- KEYS[1] lock hash
-- ARGV[1] owner
-- ARGV[2] request id
-- Returns the hold count left (0: released), or -1 when ARGV[1] does not hold
-- the lock.
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then
  return -1
end
if redis.call('HGET', KEYS[1], 'r') == ARGV[2] then
  return tonumber(redis.call('HGET', KEYS[1], 'n'))
end
local n = redis.call('HINCRBY', KEYS[1], 'n', -1)
if n <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('HSET', KEYS[1], 'r', ARGV[2])
return n
