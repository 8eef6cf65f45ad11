-- Releases a mutex if, and only if, the owner token still holds it.
-- KEYS[1] lock hash
-- ARGV[1] owner token
-- Returns 1 when released, 0 when ARGV[1] did not hold the lock.
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
