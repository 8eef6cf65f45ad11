-- Drops a job from the store-wide list of jobs with a backfill (the hint
-- the replicas read every heartbeat), only if its entry is still the one
-- the replica read: a backfill started since (a new entry, another score)
-- keeps its hint. One atomic check-and-delete; it touches only the hint key,
-- which has a hash tag of its own (Redis Cluster).
-- KEYS[1] the hint key   ARGV[1] the job   ARGV[2] the entry's score as read
-- Returns "forgot", or "kept" (the entry changed, or is gone).
-- protocol: head=2 per_run=0 answers=forgot,kept (checked against protocol.go by TestProtocolHeaders)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return 'forgot'
end
return 'kept'
