-- Sets or clears a job's cluster-wide pause flag, honoured by every replica
-- at its next claim. Resuming also clears the job's count of consecutive
-- failures and the reason an automatic pause (pause_after_failures) gave;
-- an operator's pause has no reason recorded.
-- KEYS[1] meta key of the job
-- ARGV[1] "1" to pause, "0" to resume
-- Returns 1.
redis.call('HSET', KEYS[1], 'paused', ARGV[1])
redis.call('HDEL', KEYS[1], 'paused_why')
if ARGV[1] == '0' then
  redis.call('HDEL', KEYS[1], 'fails')
end
redis.call('PEXPIRE', KEYS[1], META_TTL)
return 1
