-- Acquires a read-write lock for reading or writing, or confirms that the
-- token already holds it that way. Readers share; a writer excludes all.
-- A writer that waits (ARGV[5] = "1") posts an intent that holds back new
-- readers for ARGV[6] ms, so a stream of readers cannot starve it.
-- KEYS: see rw_common.lua
-- ARGV[1] "r" or "w"
-- ARGV[2] token
-- ARGV[3] ttl, milliseconds
-- ARGV[4] fence counter retention, milliseconds
-- ARGV[5] "1" when the writer will retry (post an intent), else "0"
-- ARGV[6] intent ttl, milliseconds
-- Returns {1, fencing token} when held; {0, ms until the blocker expires} otherwise.
local now, now_us = fence_clock()
local mode, token, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local readers, writer, last, wio = scan(now)

if mode == 'r' then
  local field = 'r:' .. token
  local mine = redis.call('HGET', KEYS[1], field)
  if mine then
    local f = string.match(mine, ':(%d+)$')
    redis.call('HSET', KEYS[1], field, int(now + ttl) .. ':' .. f)
    if now + ttl > last then last = now + ttl end
    keep(now, last)
    return {1, tonumber(f)}
  end
  if writer then
    return {0, tonumber(redis.call('HGET', KEYS[1], 'wx')) - now}
  end
  if wio then
    return {0, tonumber(redis.call('HGET', KEYS[1], 'wi')) - now}
  end
  local f = next_fence(KEYS[2], ARGV[4], now, now_us)
  redis.call('HSET', KEYS[1], field, int(now + ttl) .. ':' .. int(f))
  if now + ttl > last then last = now + ttl end
  keep(now, last)
  return {1, f}
end

if writer == token then
  redis.call('HSET', KEYS[1], 'wx', int(now + ttl))
  if now + ttl > last then last = now + ttl end
  keep(now, last)
  return {1, tonumber(redis.call('HGET', KEYS[1], 'wf'))}
end
if writer or readers > 0 then
  if ARGV[5] == '1' and (not wio or wio == token) then
    local until_ms = now + tonumber(ARGV[6])
    redis.call('HSET', KEYS[1], 'wi', int(until_ms), 'wio', token)
    if until_ms > last then last = until_ms end
    keep(now, last)
  end
  local wait = last - now
  return {0, wait}
end
local f = next_fence(KEYS[2], ARGV[4], now, now_us)
redis.call('HSET', KEYS[1], 'w', token, 'wx', int(now + ttl), 'wf', int(f))
if wio == token then
  redis.call('HDEL', KEYS[1], 'wi', 'wio')
end
if now + ttl > last then last = now + ttl end
keep(now, last)
return {1, f}
