-- Asks the cluster for a manual run of a job: the request waits in the
-- job's manual set until a replica claims it (exactly one will). A job has
-- at most ARGV[2] requests pending: Redis' memory is bounded.
-- KEYS[1] meta key of the job
-- ARGV[1] run id ("<job>@manual-<id>")   ARGV[2] most pending requests
-- Returns the request time (server ms), or -1 when the job's queue of
-- pending requests is full.
local now = now_ms()
local base = base_of(KEYS[1])
local manual = base .. 'manual'
if redis.call('ZCARD', manual) >= tonumber(ARGV[2]) then
  return -1
end
redis.call('ZADD', manual, now, ARGV[1])
redis.call('PEXPIRE', manual, META_TTL)
return now
