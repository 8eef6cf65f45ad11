-- Sets or clears a job's cluster-wide pause flag, honoured by every replica
-- at its next claim.
-- KEYS[1] meta key of the job
-- ARGV[1] "1" to pause, "0" to resume
-- Returns 1.
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
redis.call('PEXPIRE', KEYS[1], META_TTL)
return 1
