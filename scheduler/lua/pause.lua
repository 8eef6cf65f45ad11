-- Sets or clears a job's cluster-wide pause flag, honoured by every replica
-- at its next claim. Pausing a running job also queues its paused
-- notification (once: pausing a paused job changes nothing).
-- KEYS[1] meta key of the job
-- ARGV[1] "1" to pause, "0" to resume
-- Returns 1.
local was = redis.call('HGET', KEYS[1], 'paused')
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
redis.call('PEXPIRE', KEYS[1], META_TTL)
if ARGV[1] == '1' and was ~= '1' then
  local base = base_of(KEYS[1])
  local job = string.match(base, '{(.*)}')
  -- Microseconds: a pause, resume and pause in one millisecond are two events.
  local ms, us = clock()
  notify(base, {id = job .. '@paused-' .. int(us), job = job, outcome = 'paused', finished = int(ms)})
end
return 1
