-- Acquires a reentrant mutex for an owner, or re-enters it (count + 1).
-- Each call carries a request id so that a retried call (go-redis retries a
-- command that timed out) is not counted twice.
-- KEYS[1] lock hash {o = owner, n = hold count, f = fencing token, r = last request id}
-- KEYS[2] fence counter
-- ARGV[1] owner
-- ARGV[2] ttl, milliseconds
-- ARGV[3] request id
-- ARGV[4] fence counter retention, milliseconds
-- Returns {1, fencing token, hold count} when ARGV[1] holds the lock;
--         {0, remaining ttl of the holder in ms, 0} otherwise.
local owner = redis.call('HGET', KEYS[1], 'o')
if not owner then
  local f = next_fence(KEYS[2], ARGV[4])
  redis.call('HSET', KEYS[1], 'o', ARGV[1], 'n', 1, 'f', int(f), 'r', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, f, 1}
end
if owner ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1]), 0}
end
local n
if redis.call('HGET', KEYS[1], 'r') == ARGV[3] then
  n = tonumber(redis.call('HGET', KEYS[1], 'n'))
else
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
  redis.call('HSET', KEYS[1], 'r', ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tonumber(redis.call('HGET', KEYS[1], 'f')), n}
