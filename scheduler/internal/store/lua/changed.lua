-- The store-wide set of jobs whose run statistics changed lately, read and
-- written by each replica's heartbeat (jobmetrics.go): publishes this
-- replica's changes and reads everyone's since its last read. Each entry
-- is scored above every entry before it, on Redis' clock in µs (bumped past
-- the highest score if that clock stands still or steps back), so a reader
-- keeps a cursor (the highest score when it last read) and reads each
-- change once: no look-back for the replicas' clock skew, which read every
-- change ~4 times.
--
-- KEYS[1]  zset  statistics entry (statsEntry) -> score (server µs)
-- ARGV[1]  read the entries scored above this cursor (an earlier answer);
--          "" to read nothing
-- ARGV[2]  keep ms: entries older than that are dropped
-- ARGV[3]  the set's ttl ms (refreshed when something is published)
-- ARGV[4], ...: entries to publish
-- Returns {cursor, entry, entry, ...}: the cursor of the next read.
-- protocol: head=3 per_run=0 answers= (checked against protocol.go by TestProtocolHeaders)
local _, now = clock()
local key = KEYS[1]
local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local cursor = math.max(tonumber(top[2]) or 0, 0)
if #ARGV > 3 then
  cursor = math.max(now, cursor + 1)
  -- In chunks: unpack is bounded by Lua's stack (~8,000 values).
  for from = 4, #ARGV, 1000 do
    local z = {}
    for i = from, math.min(from + 999, #ARGV) do
      z[#z + 1] = int(cursor)
      z[#z + 1] = ARGV[i]
    end
    redis.call('ZADD', key, unpack(z))
  end
  redis.call('PEXPIRE', key, ARGV[3])
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. int(now - 1000 * tonumber(ARGV[2])))
local out = {int(cursor)}
if ARGV[1] ~= '' then
  for _, e in ipairs(redis.call('ZRANGEBYSCORE', key, '(' .. ARGV[1], '+inf')) do
    out[#out + 1] = e
  end
end
return out
