-- Takes a job's due notifications for delivery: each one taken is due
-- again a lease later, so if its taker dies before it reports, another
-- replica takes it then.
-- KEYS[1] meta key of the job
-- ARGV[1] taker (owner token)   ARGV[2] lease ms   ARGV[3] how many at most
-- Returns {{delivery, event JSON, attempt}, ...} and the number of events
-- dropped (queue full) since the last take.
-- protocol: head=3 per_run=0 answers= (checked against protocol.go by TestProtocolHeaders)
local base = base_of(KEYS[1])
local q, d = base .. 'notify:q', base .. 'notify:d'
local now = now_ms()
local out = {}
for _, k in ipairs(redis.call('ZRANGEBYSCORE', q, '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))) do
  local body = redis.call('HGET', d, k)
  if body then
    redis.call('ZADD', q, now + tonumber(ARGV[2]), k)
    redis.call('HSET', d, k .. '\no', ARGV[1])
    out[#out + 1] = {k, body, redis.call('HINCRBY', d, k .. '\nn', 1)}
  else
    redis.call('ZREM', q, k)
  end
end
local dropped = tonumber(redis.call('HGET', d, '#dropped')) or 0
if dropped > 0 then
  redis.call('HDEL', d, '#dropped')
end
return {out, dropped}
