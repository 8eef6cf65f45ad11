-- Asks the cluster for a manual run of a job: the request waits in the
-- job's manual set until a replica claims it (exactly one will).
-- KEYS[1] meta key of the job
-- ARGV[1] run id ("<job>@manual-<id>")
-- Returns the request time (server ms).
local now = now_ms()
local base = base_of(KEYS[1])
redis.call('ZADD', base .. 'manual', now, ARGV[1])
redis.call('PEXPIRE', base .. 'manual', META_TTL)
return now
