-- fence.lua (internal/fencing) is the one implementation of fencing tokens,
-- shared by the scheduler and lockprovider: prepend it to a script. Where
-- the last token is kept (a hash field, a string) is the caller's business;
-- how the next one is chosen is decided here only.

-- fence_clock returns the server's time (TIME) in milliseconds and in
-- microseconds, from one call. Tokens and lease expiries are always on
-- Redis' clock, never on a client's.
local function fence_clock()
  local t = redis.call('TIME')
  local sec, us = tonumber(t[1]), tonumber(t[2])
  return sec * 1000 + math.floor(us / 1000), sec * 1000000 + us
end

-- fence_now_us returns the server's time in microseconds as a string of
-- digits, TIME's own: for a script that stores it and would otherwise pay
-- for string.format (fence_int).
local function fence_now_us()
  local t = redis.call('TIME')
  return t[1] .. string.sub('00000' .. t[2], -6)
end

-- fence_after returns the token to issue at server time now_us
-- (microseconds, from fence_clock) after the tokens given: the last one
-- issued, and any floor the caller knows of (nil or false count as 0). It
-- is now_us when that is above them all, else the highest of them plus one.
local function fence_after(now_us, ...)
  now_us = tonumber(now_us)
  local top = 0
  for i = 1, select('#', ...) do
    local v = tonumber((select(i, ...))) or 0
    if v > top then
      top = v
    end
  end
  if now_us > top then
    return now_us
  end
  return top + 1
end

-- fence_int writes a token (any integer) as plain digits: tostring() and
-- cjson would round 16-digit numbers to exponent notation.
local function fence_int(n)
  return string.format('%.0f', n)
end

