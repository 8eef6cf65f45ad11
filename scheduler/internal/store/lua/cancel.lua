-- An operator asks a running run to stop. The record keeps who asked and
-- when (cancelled_by, cancel_at); the run's holder, on whichever replica,
-- learns it at its next renewal (renew.lua answers "cancelled"), cancels
-- the job's context and closes the record as cancelled itself. The slot
-- stays held until then: nothing starts in the run's place while its job
-- winds down, and the run, decided long ago, never starts again.
-- KEYS[1] meta key of the job
-- ARGV[1] run id   ARGV[2] who asks
-- Returns {"asked"} (now, or by an earlier request: the first one is kept),
-- {"ended", outcome} (not running: ended or not started), or {"none"} (no
-- record: not decided, or expired).
-- protocol: head=2 per_run=0 answers=asked,ended,none (checked against protocol.go by TestProtocolHeaders)
local base = base_of(KEYS[1])
local rk = run_key(base, ARGV[1])
local rec = redis.call('HMGET', rk, 'outcome', 'cancelled_by')
if not rec[1] then
  return {'none'}
end
if rec[1] ~= 'running' then
  return {'ended', rec[1]}
end
if not rec[2] then
  redis.call('HSET', rk, 'cancelled_by', ARGV[2], 'cancel_at', int(now_ms()))
end
return {'asked'}
