-- Asks the cluster for a manual run of a job: the request waits in the
-- job's manual set until a replica claims it (exactly one will). A job has
-- at most ARGV[2] requests waiting, pending (not yet picked up) or queued
-- for a slot (mqueue): Redis' memory and the replicas' polling are bounded.
-- KEYS[1] meta key of the job
-- ARGV[1] run id ("<job>@manual-<id>")   ARGV[2] most pending requests
-- ARGV[3] a fresh random epoch   ARGV[4] data-loss margin ms (see check_epoch)
-- ARGV[5] 1: the store began empty with this process (check_epoch's born)
-- Returns the request time (server ms), or -1 when the job has as many
-- requests waiting as it may.
-- protocol: head=5 per_run=0 answers= (checked against protocol.go by TestProtocolHeaders)
local now = now_ms()
local base = base_of(KEYS[1])
local manual = base .. 'manual'
-- A job's state created here is created as check_epoch would (a possible
-- loss: nothing scheduled before the floor starts), but noticed before
-- this request: the request itself runs. (A meta without an epoch holds
-- only the notify flag a replica's subscription wrote.)
if redis.call('HEXISTS', KEYS[1], 'epoch') == 0 then
  if ARGV[5] == '1' then
    redis.call('HSET', KEYS[1], 'epoch', ARGV[3], 'floor', 0, 'guarded', '1', 'lost', 0, 'unsure', '0')
  else
    redis.call('HSET', KEYS[1], 'epoch', ARGV[3], 'floor', int(now + tonumber(ARGV[4])), 'guarded', '1',
      'lost', int(now), 'unsure', '1')
  end
  redis.call('PEXPIRE', KEYS[1], META_TTL)
end
-- A queued run's entry outlives its wait only when its waiter vanished
-- with its record: gone from the count once its wait is over.
local mqueue = base .. 'mqueue'
redis.call('ZREMRANGEBYSCORE', mqueue, '-inf', now)
if redis.call('ZCARD', manual) + redis.call('ZCARD', mqueue) >= tonumber(ARGV[2]) then
  return -1
end
redis.call('ZADD', manual, now, ARGV[1])
redis.call('PEXPIRE', manual, META_TTL)
return now
