-- Acquires a mutex for an owner token, or confirms that the token already
-- holds it: go-redis retries a command that timed out, and the retry must
-- not report "not acquired" for a lock that holds our own token.
-- KEYS[1] lock hash {o = owner token, f = fencing token}
-- KEYS[2] fence counter
-- ARGV[1] owner token
-- ARGV[2] ttl, milliseconds
-- ARGV[3] fence counter retention, milliseconds
-- Returns {1, fencing token} when ARGV[1] holds the lock now;
--         {0, remaining ttl of the holder in ms} otherwise.
local owner = redis.call('HGET', KEYS[1], 'o')
if owner then
  if owner == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return {1, tonumber(redis.call('HGET', KEYS[1], 'f'))}
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local f = next_fence(KEYS[2], ARGV[3])
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'f', int(f))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, f}
