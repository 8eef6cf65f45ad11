-- Starts another attempt of a run in flight (a retry): checks that its
-- holder still owns it and issues a new, higher fencing token.
-- KEYS[1] meta key of the job
-- ARGV[1] run id   ARGV[2] owner token   ARGV[3] attempt number
-- ARGV[4] highest fencing token the replica has seen
-- Returns the fencing token, or 0 when the run is no longer held.
-- protocol: head=4 per_run=0 answers= (checked against protocol.go by TestProtocolHeaders)
local base = base_of(KEYS[1])
local rk = run_key(base, ARGV[1])
local rec = redis.call('HMGET', rk, 'owner', 'outcome')
if rec[1] ~= ARGV[2] or rec[2] ~= 'running' then
  return 0
end
local f = next_fence(KEYS[1], ARGV[4])
redis.call('HSET', rk, 'fence', int(f), 'attempts', ARGV[3])
return int(f)
