-- common.lua is prepended to every script of this package, after
-- internal/fencing's fence.lua (fence_clock, fence_after, fence_int): the
-- fencing design the scheduler shares.

-- Server time in milliseconds: lease expiry is always scored on Redis' own
-- clock, never on a client's.
local function now_ms()
  return (fence_clock())
end

local int = fence_int

-- The fencing counter of a name: one string key, "<prefix>:{<name>}:fence",
-- that every primitive of the name draws its tokens from, kept for the fence
-- retention after its last use. It also holds the name's Mutex, so that a
-- mutex acquire or release reads and writes one key, once:
--   "<last>"                                    the Mutex is free
--   "<last> <fence> <since> <ttl> <owner>"      held: the holder's fencing
--                                               token, the server time (µs)
--                                               of its grant or last renewal,
--                                               its ttl (ms), its owner token
-- <last> is the last token issued for the name, by any primitive. The hold
-- ends at since + ttl; the fields are kept as the strings TIME and the
-- caller gave, so the common paths format no number (string.format is the
-- dearest thing a short script does).
-- read_counter parses one (a missing key is false): last, and the holder as
-- {f = fence, s = since (string), t = ttl (string), o = owner, x = end in
-- server ms}, or nil when free.
local function read_counter(v)
  if not v then
    return 0, nil
  end
  local last, f, since, ttl, o = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (.+)$')
  if last then
    return tonumber(last), {f = tonumber(f), s = since, t = ttl, o = o,
      x = math.floor(tonumber(since) / 1000) + tonumber(ttl)}
  end
  return tonumber(v) or 0, nil
end

-- counter_value writes a counter's value back.
local function counter_value(last, h)
  if not h then
    return int(last)
  end
  return int(last) .. ' ' .. int(h.f) .. ' ' .. h.s .. ' ' .. h.t .. ' ' .. h.o
end

-- counter_ttl is how long a counter must live (ms): the retention, and at
-- least until its mutex holder's lease ends.
local function counter_ttl(h, now, retention_ms)
  local ttl = tonumber(retention_ms)
  if h and h.x - now > ttl then
    ttl = h.x - now
  end
  return int(ttl)
end

-- next_fence issues the next fencing token of a name (fence_after over the
-- name's counter) and remembers it, keeping the Mutex state the counter
-- holds. now and now_us are the caller's fence_clock(), if it has one.
local function next_fence(key, retention_ms, now, now_us)
  if not now_us then
    now, now_us = fence_clock()
  end
  local last, h = read_counter(redis.call('GET', key))
  local f = fence_after(now_us, last)
  redis.call('SET', key, counter_value(f, h), 'PX', counter_ttl(h, now, retention_ms))
  return f
end
