-- Acquires a mutex for an owner token, or confirms that the token already
-- holds it: go-redis retries a command that timed out, and the retry must
-- not report "not acquired" for a lock that holds our own token.
-- The mutex lives in the name's fencing counter (common.lua). The common
-- case — the lock is free, the clock is past the last token — costs one
-- TIME and one SET ... GET: the lock is taken with the token the clock
-- gives, and the value it replaced says whether that was right. The rare
-- cases put it right, inside this same script: no one ever sees the guess.
-- KEYS[1] fencing counter
-- ARGV[1] owner token
-- ARGV[2] ttl, milliseconds
-- ARGV[3] how long the counter must live now, ms: max(retention, ttl)
-- Returns the fencing token (> 0) when ARGV[1] holds the lock now;
--         minus the remaining ttl of the holder in ms (≤ 0) otherwise.
-- TIME inline (fence.lua's fence_now_us): the fast path defines no function.
local t = redis.call('TIME')
local us = t[1] .. string.sub('00000' .. t[2], -6)
local old = redis.call('SET', KEYS[1], us .. ' ' .. us .. ' ' .. us .. ' ' .. ARGV[2] .. ' ' .. ARGV[1], 'PX', ARGV[3], 'GET')
local now_us = tonumber(us)
if not old or (not string.find(old, ' ', 1, true) and (tonumber(old) or 0) < now_us) then
  return now_us
end
-- @shared
local now = math.floor(now_us / 1000)
local last, h = read_counter(old)
local me = {f = now_us, s = us, t = ARGV[2], o = ARGV[1]}
if h and h.x > now then
  if h.o == ARGV[1] then
    -- Ours already (a retried call): keep its token, extend it.
    me.f = h.f
    redis.call('SET', KEYS[1], counter_value(last, me), 'PX', ARGV[3])
    return h.f
  end
  redis.call('SET', KEYS[1], old, 'PX', counter_ttl(h, now, ARGV[3]))
  return now - h.x
end
if now_us <= last then
  -- The clock has not passed the last token (it stepped back, or another
  -- primitive of the name issued one this microsecond).
  me.f = fence_after(now_us, last)
  redis.call('SET', KEYS[1], counter_value(me.f, me), 'PX', ARGV[3])
end
return me.f
