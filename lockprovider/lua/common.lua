-- common.lua is prepended to every script of this package.

-- Server time in milliseconds: lease expiry is always scored on Redis' own
-- clock, never on a client's.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers are kept as strings: string.format avoids the exponent notation
-- tostring() produces for numbers above 1e14.
local function int(n)
  return string.format('%.0f', n)
end

-- next_fence returns the next fencing token of a lock name and remembers it.
-- A token is the server's TIME in microseconds, bumped past the last token
-- issued for the name. Because it is anchored to time it keeps rising even
-- when the remembered value is gone (expiry, a restart without persistence,
-- a failover to a replica that missed writes), as long as the server clock
-- does not step back by more than the time between two acquisitions.
local function next_fence(key, retention_ms)
  local t = redis.call('TIME')
  local f = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('GET', key) or '0') or 0
  if f <= last then
    f = last + 1
  end
  redis.call('SET', key, int(f), 'PX', retention_ms)
  return f
end

