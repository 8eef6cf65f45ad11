-- Sets or clears a job's cluster-wide pause flag, honoured by every replica
-- at its next claim. Pausing a running job also queues its paused
-- notification (once: pausing a paused job changes nothing). Resuming also
-- clears the job's failure streak (meta fails: pause_after_failures counts
-- afresh, the consecutive_failures gauge reads 0, and the next success is
-- not a recovered event) and the reason an automatic pause
-- (pause_after_failures) gave. An operator's pause keeps the reason given,
-- if any, in the same field (paused_why), and its notification carries it.
-- KEYS[1] meta key of the job
-- ARGV[1] "1" to pause, "0" to resume   ARGV[2] why ("" for no reason)
-- Returns 1.
-- protocol: head=2 per_run=0 answers= (checked against protocol.go by TestProtocolHeaders)
local was = redis.call('HGET', KEYS[1], 'paused')
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
redis.call('HDEL', KEYS[1], 'paused_why')
if ARGV[1] == '1' and ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], 'paused_why', ARGV[2])
end
if ARGV[1] == '0' then
  redis.call('HDEL', KEYS[1], 'fails')
end
redis.call('PEXPIRE', KEYS[1], META_TTL)
if ARGV[1] == '1' and was ~= '1' then
  local base = base_of(KEYS[1])
  local job = job_of(base)
  -- Microseconds: a pause, resume and pause in one millisecond are two events.
  local ms, us = clock()
  local ev = {id = job .. '@paused-' .. int(us), job = job, outcome = 'paused', finished = int(ms)}
  if ARGV[2] ~= '' then
    ev.paused = ARGV[2]
  end
  notify(base, ev)
end
return 1
