-- Holds a pool's slots on Redis Cluster, where a job's scripts cannot reach
-- its pool's key (the pool's hash slot is not the job's): the replica takes
-- a run's pool slot here before it claims (or admits) the run, renews it
-- with the run's lease, and frees it when the run ends or was not started
-- (pool.go). Elsewhere the job's scripts hold pool slots themselves.
-- KEYS[1] the pool's key, "<prefix>:{pool:<pool>}:held" (zset member ->
--         lease expiry, server ms; a member is a run id, or a run id and
--         "#a" for a slot taken to admit a queued run)
-- ARGV[1] take|renew|release   ARGV[2] member   ARGV[3] the pool's size in
--         the asking replica's table   ARGV[4] lease ms
-- Returns "ok" (take: the slot is held, by a claim of this run already or
-- now; renew: renewed; release: freed), "new" (take: taken now), "full"
-- (take: every slot is held) or "lost" (renew: the member holds no slot).
-- protocol: head=4 per_run=0 answers=ok,new,full,lost (checked against protocol.go by TestProtocolHeaders)
local key, op, member = KEYS[1], ARGV[1], ARGV[2]
local now = now_ms()
if op == 'release' then
  redis.call('ZREM', key, member)
  return 'ok'
end
local lease = tonumber(ARGV[4])
if op == 'renew' then
  local exp = tonumber(redis.call('ZSCORE', key, member))
  if not exp or exp <= now then
    redis.call('ZREM', key, member)
    return 'lost'
  end
  redis.call('ZADD', key, 'XX', now + lease, member)
  return 'ok'
end
expire(key, now)
if redis.call('ZSCORE', key, member) then
  redis.call('ZADD', key, now + lease, member)
  return 'ok'
end
if redis.call('ZCARD', key) >= tonumber(ARGV[3]) then
  return 'full'
end
redis.call('ZADD', key, now + lease, member)
redis.call('PEXPIRE', key, META_TTL)
return 'new'
