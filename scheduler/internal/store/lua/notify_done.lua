-- Reports on a notification its taker tried: delivered (or given up), it
-- leaves the queue; failed, it is due again after a backoff, for any replica.
-- KEYS[1] meta key of the job
-- ARGV[1] delivery   ARGV[2] taker (owner token)   ARGV[3] -1 to remove it,
-- else the delay ms before it is due again
-- Returns "ok", or "lost" (its lease ended and it may be another's now).
-- protocol: head=3 per_run=0 answers=ok,lost (checked against protocol.go by TestProtocolHeaders)
local base = base_of(KEYS[1])
local q, d = base .. 'notify:q', base .. 'notify:d'
local k = ARGV[1]
if redis.call('HGET', d, k .. '\no') ~= ARGV[2] then
  return 'lost'
end
local delay = tonumber(ARGV[3])
if delay < 0 then
  redis.call('ZREM', q, k)
  redis.call('HDEL', d, k, k .. '\no', k .. '\nn')
else
  redis.call('ZADD', q, 'XX', now_ms() + delay, k)
  redis.call('HDEL', d, k .. '\no')
end
return 'ok'
