-- Releases a mutex if, and only if, the owner token still holds it. The
-- counter it lives in stays. Written as SET ... GET of the free counter the
-- caller expects, putting back what it replaced when that was not ours; no
-- TIME: an owner whose lease ran out while no one took the lock still holds
-- it, and releases it.
-- KEYS[1] fencing counter (common.lua)
-- ARGV[1] owner token
-- ARGV[2] the lease's fencing token (0 when unknown)
-- Returns 1 when released, 0 when ARGV[1] did not hold the lock.
-- The holder is the value's last field, and owner tokens hold no space: a
-- suffix compare and a plain find, cheaper than a pattern match.
local old = redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL', 'GET')
local tok = ARGV[1]
if old and string.sub(old, -#tok - 1) == ' ' .. tok then
  local last = string.sub(old, 1, string.find(old, ' ', 1, true) - 1)
  if last ~= ARGV[2] then
    redis.call('SET', KEYS[1], last, 'KEEPTTL')
  end
  return 1
end
if old then
  redis.call('SET', KEYS[1], old, 'KEEPTTL')
else
  redis.call('DEL', KEYS[1])
end
return 0
