-- Asks for an ended run again, as a manual run linked to it: the request
-- joins the job's pending manual runs (as trigger.lua's), and the job's
-- list of retries (a zset, the latest RETRIES kept) links the new run id to
-- the old one and says who asked.
-- KEYS[1] meta key of the job
-- ARGV[1] run id to retry   ARGV[2] the new run id ("<job>@manual-<id>")
-- ARGV[3] most pending requests   ARGV[4] who asks
-- ARGV[5] 1: the caller found the run ended in the job's history (its
--         record may have expired)
-- Returns {"queued", request time (server ms)}, {"running"} (not ended:
-- running or waiting for a slot), {"full"} (the job's queue of pending
-- manual runs is full) or {"none"} (no such run, or no state of the job).
-- protocol: head=5 per_run=0 answers=queued,running,full,none (checked against protocol.go by TestProtocolHeaders)
local RETRIES = 100
local now = now_ms()
local base = base_of(KEYS[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'none'}
end
local rk = run_key(base, ARGV[1])
local outcome = redis.call('HGET', rk, 'outcome')
if outcome == 'running' or outcome == 'waiting' then
  return {'running'}
end
if not outcome and ARGV[5] ~= '1' then
  return {'none'}
end
local manual = base .. 'manual'
if redis.call('ZCARD', manual) >= tonumber(ARGV[3]) then
  return {'full'}
end
redis.call('ZADD', manual, now, ARGV[2])
redis.call('PEXPIRE', manual, META_TTL)
local retries = base .. 'retries'
redis.call('ZADD', retries, now, ARGV[2] .. '\n' .. ARGV[1] .. '\n' .. ARGV[4])
-- Trimmed with the commands every script uses (the documented ACL user's).
local n = redis.call('ZCARD', retries)
if n > RETRIES then
  redis.call('ZREM', retries, unpack(redis.call('ZRANGE', retries, 0, n - RETRIES - 1)))
end
redis.call('PEXPIRE', retries, META_TTL)
return {'queued', int(now)}
