-- A job's backfill (Control.Backfill): starts, cancels, stops or reads it.
-- The instants themselves are taken by claim.lua (kind b); see
-- parts/backfill.lua's bf_prune for the state kept.
-- KEYS[1] meta key of the job
-- ARGV[1] op: start | cancel | abort | read
--   abort: a replica stops the backfill it cannot carry out (the job's
--   schedule changed since it was asked for): as cancel, with a reason
-- ARGV[2] start, abort: the backfill's id
-- ARGV[3] start: from ms; abort: the reason   ARGV[4] start: to ms
-- ARGV[5] start: the last instant in the range, ms   ARGV[6] start: parallel
-- ARGV[7] start: total instants   ARGV[8] start: the cursor, ms (before the first instant)
-- ARGV[9] start: how long the state of a finished backfill is kept, ms
-- Returns: start: "started", or "busy" when the job has a backfill going on;
-- cancel, abort: "cancelled", or "none" when none (abort: not that one) is
-- going on; then (every op) the backfill's state as field, value pairs,
-- "inflight", runs in flight, and "redo", the instants to take again (ms,
-- comma-separated).
-- protocol: head=9 per_run=0 answers=started,busy,cancelled,none (checked against protocol.go by TestProtocolHeaders)
local now = now_ms()
local base = base_of(KEYS[1])
local bk = base .. 'backfill'
local op = ARGV[1]
local answer = ''
bf_settle(base, now)
if op == 'start' then
  if redis.call('EXISTS', bk) == 1 and not redis.call('HGET', bk, 'finished') then
    answer = 'busy'
  else
    redis.call('DEL', bk, base .. 'bfruns', base .. 'bfredo', base .. 'bfseen')
    -- What ran already (bfseen); claim.lua reads the entries filed later.
    bf_seen(base, tonumber(ARGV[3]), tonumber(ARGV[5]), nil)
    redis.call('HSET', bk, 'seen', int(now - 1000), 'id', ARGV[2], 'from', ARGV[3], 'to', ARGV[4], 'last', ARGV[5],
      'parallel', ARGV[6], 'total', ARGV[7], 'cursor', ARGV[8], 'keep', ARGV[9], 'created', int(now), 'decided', 0, 'started', 0,
      'skipped', 0, 'already', 0, 'succeeded', 0, 'failed', 0)
    redis.call('PEXPIRE', bk, META_TTL)
    answer = 'started'
  end
elseif op == 'cancel' or op == 'abort' then
  local b = redis.call('HMGET', bk, 'id', 'finished', 'cancelled')
  if b[1] and not b[2] and (op == 'cancel' or b[1] == ARGV[2] and b[3] ~= '1') then
    redis.call('HSET', bk, 'cancelled', '1')
    if op == 'abort' then
      redis.call('HSET', bk, 'error', ARGV[3])
    end
    -- Instants taken back are dropped with the rest.
    redis.call('DEL', base .. 'bfredo')
    bf_settle(base, now)
    answer = 'cancelled'
  else
    answer = 'none'
  end
end
local out = {answer}
for _, v in ipairs(redis.call('HGETALL', bk)) do
  out[#out + 1] = v
end
out[#out + 1] = 'inflight'
out[#out + 1] = redis.call('SCARD', base .. 'bfruns')
out[#out + 1] = 'redo'
out[#out + 1] = table.concat(redis.call('ZRANGE', base .. 'bfredo', 0, 99), ',')
return out
