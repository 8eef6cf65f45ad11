-- Releases one reader's or the writer's hold. A reader can only remove its
-- own field, so a stale reader can never release another reader's hold.
-- KEYS: see rw_common.lua
-- ARGV[1] "r" or "w"
-- ARGV[2] token
-- Returns 1 when a live hold was released, 0 otherwise.
local now = now_ms()
local readers, writer = scan(now)
if ARGV[1] == 'r' then
  return redis.call('HDEL', KEYS[1], 'r:' .. ARGV[2])
end
if writer == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'w', 'wx', 'wf')
  return 1
end
return 0
