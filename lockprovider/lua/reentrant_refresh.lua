-- Extends a reentrant mutex held by an owner. Never creates the key.
-- KEYS[1] lock hash
-- ARGV[1] owner
-- ARGV[2] ttl, milliseconds
-- Returns 1 when extended, 0 when ARGV[1] does not hold the lock.
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
