-- parts/token.lua: fencing tokens: fence.lua's clock and int, and the job's next token.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

-- clock and int are internal/fencing's fence.lua (prepended to every
-- script): the server time in ms and µs from one TIME call; an integer as
-- plain digits (tostring() and cjson would round 16-digit fencing tokens).
local clock, int = fence_clock, fence_int

-- next_fence issues the job's next fencing token (fence.lua's rule): the
-- server's TIME in microseconds, bumped past both the last token issued and
-- the highest token the asking replica has seen. Anchored to time, tokens
-- keep rising after Redis loses the counter. fence_after (fence.lua) is the
-- same for a caller that read the last token and the time already.
local function next_fence(meta, floor)
  local _, us = clock()
  local f = fence_after(us, redis.call('HGET', meta, 'fence'), floor)
  redis.call('HSET', meta, 'fence', int(f))
  return f
end
