-- The replica registry: each replica writes its record here once per
-- heartbeat period, with a time to live, and reads everyone else's in the
-- same call. A replica that stops beating drops out after its TTL; the
-- keys themselves expire when the last replica has gone, so the registry
-- holds at most one record per live replica.
--
-- KEYS[1]  zset  replica id -> expiry (server ms)
-- KEYS[2]  hash  replica id -> the replica's record (JSON, written by Go)
-- ARGV[1]  "beat" (register or refresh), "leave" (deregister) or "list"
-- ARGV[2]  replica id ("" with list)
-- ARGV[3]  its record (beat only)
-- ARGV[4]  ttl, ms (beat only)
-- Returns {server time ms, id, expiry ms, record, id, expiry ms, record, ...}
-- for every live replica, this one included, as strings.
-- protocol: head=4 per_run=0 answers= (checked against protocol.go by TestProtocolHeaders)
local now = now_ms()
local ids, recs = KEYS[1], KEYS[2]
local dead = redis.call('ZRANGEBYSCORE', ids, '-inf', now)
if #dead > 0 then
  redis.call('HDEL', recs, unpack(dead))
  redis.call('ZREMRANGEBYSCORE', ids, '-inf', now)
end
local mode, id = ARGV[1], ARGV[2]
if mode == 'beat' then
  redis.call('ZADD', ids, now + tonumber(ARGV[4]), id)
  redis.call('HSET', recs, id, ARGV[3])
elseif mode == 'leave' then
  redis.call('ZREM', ids, id)
  redis.call('HDEL', recs, id)
end
local live = redis.call('ZRANGE', ids, 0, -1, 'WITHSCORES')
local out = {int(now)}
if #live == 0 then
  return out
end
if mode ~= 'list' then
  -- Both keys live as long as the longest-lived record.
  local last = tonumber(live[#live]) - now + 1000
  redis.call('PEXPIRE', ids, last)
  redis.call('PEXPIRE', recs, last)
end
for i = 1, #live, 2 do
  local rec = redis.call('HGET', recs, live[i])
  if rec then
    out[#out + 1] = live[i]
    out[#out + 1] = int(tonumber(live[i + 1]))
    out[#out + 1] = rec
  end
end
return out
