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
-- Returns the fencing token (> 0) when ARGV[1] holds the lock now (as the
--         digits of TIME's microseconds on the fast path, a number
--         otherwise: the client reads both as an integer);
--         minus the remaining ttl of the holder in ms (≤ 0) otherwise.
-- The fast path runs on every acquire, and in it each string made and each
-- library call is a good part of Redis' time (tonumber alone is about a
-- tenth of the script): TIME inline (fence.lua's fence_now_us), so that it
-- defines no function; the microseconds padded only when TIME gives fewer
-- than six digits (one time in ten); and the counter it replaced compared
-- as a string, not read as a number. A free counter is its last token
-- alone, digits without a leading zero, and every token is at least TIME's
-- microseconds when it was issued (16 digits): a held counter holds three
-- tokens and more, so a value as long as the clock's digits is a free
-- counter, and compares as its number does (digits, byte by byte); a
-- shorter one without a space is a free counter below the clock.
local t = redis.call('TIME')
local us = t[2]
if #us < 6 then
  us = string.sub('00000' .. us, -6)
end
us = t[1] .. us
local old = redis.call('SET', KEYS[1], us .. ' ' .. us .. ' ' .. us .. ' ' .. ARGV[2] .. ' ' .. ARGV[1], 'PX', ARGV[3], 'GET')
if not old or (#old == #us and old < us) or (#old < #us and not string.find(old, ' ', 1, true)) then
  return us
end
-- @shared
local now_us = tonumber(us)
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
