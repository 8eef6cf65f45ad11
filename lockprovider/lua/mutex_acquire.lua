-- Acquires a mutex for an owner token, or confirms that the token already
-- holds it: go-redis retries a command that timed out, and the retry must
-- not report "not acquired" for a lock that holds our own token.
-- The mutex lives in the name's fencing counter (common.lua). The common
-- case — the lock is free, the clock is ahead of the last token — costs one
-- TIME and one SET ... GET: the lock is taken with the token the clock
-- gives, and the value it replaced says whether that was right. The rare
-- cases put it right, inside this same script: no one ever sees the guess.
-- KEYS[1] fencing counter
-- ARGV[1] owner token
-- ARGV[2] ttl, milliseconds
-- ARGV[3] fence counter retention, milliseconds
-- Returns {1, fencing token} when ARGV[1] holds the lock now;
--         {0, remaining ttl of the holder in ms} otherwise.
local now, now_us = fence_clock()
local me = {f = now_us, x = now + tonumber(ARGV[2]), o = ARGV[1]}
local old = redis.call('SET', KEYS[1], counter_value(now_us, me), 'PX', counter_ttl(me, now, ARGV[3]), 'GET')
local last, h = read_counter(old)
if h and h.x > now then
  if h.o == ARGV[1] then
    -- Ours already (a retried call): keep its token, extend it.
    me.f = h.f
    redis.call('SET', KEYS[1], counter_value(last, me), 'PX', counter_ttl(me, now, ARGV[3]))
    return {1, h.f}
  end
  redis.call('SET', KEYS[1], old, 'PX', counter_ttl(h, now, ARGV[3]))
  return {0, h.x - now}
end
if now_us <= last then
  -- The clock has not passed the last token (it stepped back, or another
  -- primitive of the name issued one this microsecond).
  me.f = fence_after(now_us, last)
  redis.call('SET', KEYS[1], counter_value(me.f, me), 'PX', counter_ttl(me, now, ARGV[3]))
end
return {1, me.f}
