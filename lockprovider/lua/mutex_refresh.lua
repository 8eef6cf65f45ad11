-- Extends a mutex held by an owner token. Never re-creates a hold that is
-- gone: a missing or foreign hold means the lease is lost, and re-creating
-- it could hand the lock to two owners at once. Like mutex_acquire, it
-- writes what it expects with SET ... GET and puts back what it replaced
-- when that was not ours.
-- KEYS[1] fencing counter (common.lua)
-- ARGV[1] owner token
-- ARGV[2] ttl, milliseconds
-- ARGV[3] how long the counter must live now, ms: max(retention, ttl)
-- ARGV[4] the lease's fencing token
-- Returns 1 when extended, 0 when ARGV[1] does not hold the lock.
local us = fence_now_us()
local old = redis.call('SET', KEYS[1], ARGV[4] .. ' ' .. ARGV[4] .. ' ' .. us .. ' ' .. ARGV[2] .. ' ' .. ARGV[1],
  'PX', ARGV[3], 'GET')
local now = math.floor(tonumber(us) / 1000)
local last, h = read_counter(old)
if h and h.o == ARGV[1] and h.x > now then
  local f = tonumber(ARGV[4])
  if last ~= f or h.f ~= f then
    -- Tokens issued since by other primitives of the name, or another
    -- master's token (Redlock): keep the counter's and the hold's own.
    redis.call('SET', KEYS[1], counter_value(last, {f = h.f, s = us, t = ARGV[2], o = ARGV[1]}), 'PX', ARGV[3])
  end
  return 1
end
if old then
  redis.call('SET', KEYS[1], old, 'PX', counter_ttl(h, now, ARGV[3]))
else
  redis.call('DEL', KEYS[1])
end
return 0
