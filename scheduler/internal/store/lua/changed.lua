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
  -- Every entry gets the same score: written once (string.format is
  -- dear, and a heartbeat publishes a change of every run it closed).
  local score = int(cursor)
  -- In chunks: unpack is bounded by Lua's stack (~8,000 values).
  for from = 4, #ARGV, 1000 do
    local z, n = {}, 0
    for i = from, math.min(from + 999, #ARGV) do
      z[n + 1], z[n + 2] = score, ARGV[i]
      n = n + 2
    end
    redis.call('ZADD', key, unpack(z))
  end
  redis.call('PEXPIRE', key, ARGV[3])
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. int(now - 1000 * tonumber(ARGV[2])))
if ARGV[1] == '' then
  return {int(cursor)}
end
-- The entries read are answered as read, the cursor put in front (in C:
-- every replica reads every change, and a copy in Lua cost each a step).
local out = redis.call('ZRANGEBYSCORE', key, '(' .. ARGV[1], '+inf')
table.insert(out, 1, int(cursor))
return out
