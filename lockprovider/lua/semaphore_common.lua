-- semaphore_common.lua is prepended to the semaphore scripts.
-- KEYS[1] holders: zset token -> lease expiry (server ms)
-- KEYS[2] fences:  hash token -> fencing token
-- KEYS[3] queue:   zset token -> ticket (FIFO order of waiters)
-- KEYS[4] waiting: zset token -> waiter expiry (server ms)
-- KEYS[5] meta:    hash {limit, ticket}
-- KEYS[6] fence counter

-- reap removes holders and waiters whose expiry has passed. Expired holders
-- free their slots here, in the same script that admits new ones, so no
-- decision is ever made on a stale count.
local function reap(now)
  local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
  for _, t in ipairs(dead) do
    redis.call('HDEL', KEYS[2], t)
  end
  if #dead > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  end
  local gone = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
  for _, t in ipairs(gone) do
    redis.call('ZREM', KEYS[3], t)
  end
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  end
end

-- keep sets every key's TTL to the latest expiry it holds, so an abandoned
-- semaphore frees its memory by itself.
local function keep(now, retention_ms)
  local last = now + 1
  local h = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if h[2] and tonumber(h[2]) > last then last = tonumber(h[2]) end
  local w = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  if w[2] and tonumber(w[2]) > last then last = tonumber(w[2]) end
  local ttl = int(last - now)
  for i = 1, 4 do
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
  redis.call('PEXPIRE', KEYS[5], retention_ms)
end

