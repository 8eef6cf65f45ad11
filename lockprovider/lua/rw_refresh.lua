-- Extends one reader's or the writer's hold. Never re-creates a hold that
-- expired or was released.
-- KEYS: see rw_common.lua
-- ARGV[1] "r" or "w"
-- ARGV[2] token
-- ARGV[3] ttl, milliseconds
-- Returns 1 when extended, 0 when the token holds nothing of that kind.
local now = now_ms()
local ttl = tonumber(ARGV[3])
local readers, writer, last = scan(now)
if ARGV[1] == 'r' then
  local field = 'r:' .. ARGV[2]
  local mine = redis.call('HGET', KEYS[1], field)
  if not mine then
    return 0
  end
  redis.call('HSET', KEYS[1], field, int(now + ttl) .. ':' .. string.match(mine, ':(%d+)$'))
elseif writer == ARGV[2] then
  redis.call('HSET', KEYS[1], 'wx', int(now + ttl))
else
  return 0
end
if now + ttl > last then last = now + ttl end
keep(now, last)
return 1
