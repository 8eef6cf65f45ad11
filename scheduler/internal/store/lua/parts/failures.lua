-- parts/failures.lua: the failure streak and pause_after_failures.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

-- pause_after_failures ------------------------------------------------
-- tally counts how a started run ended toward its job's consecutive
-- failures (meta field fails; the one failure streak: pause_after_failures,
-- the consecutive_failures gauge and the recovered notification all read
-- it): failed, timed_out and lease_lost add one, succeeded resets it, any
-- other end (interrupted, replaced) leaves it; unnote_lease_lost takes a
-- lease_lost back. When the count reaches the run's pause_after_failures
-- (its record's pf, set at the claim; 0: never), the job is paused
-- cluster-wide, like an operator's pause it queues the paused notification,
-- and the meta's paused_why and the run's record (field paused) say why.
-- resume clears both (pause.lua). Returns the reason when this run paused
-- the job, and the streak a success ended (0 otherwise).
local BAD_END = {failed = true, timed_out = true, lease_lost = true}
local function tally(base, rk, outcome)
  local meta = base .. 'meta'
  if outcome == 'succeeded' then
    local ended = tonumber(redis.call('HGET', meta, 'fails')) or 0
    redis.call('HDEL', meta, 'fails')
    return nil, ended
  end
  if not BAD_END[outcome] then
    return nil, 0
  end
  local n = redis.call('HINCRBY', meta, 'fails', 1)
  local limit = tonumber(redis.call('HGET', rk, 'pf')) or 0
  if limit <= 0 or n < limit or redis.call('HGET', meta, 'paused') == '1' then
    return nil, 0
  end
  local why = string.format('paused after %d runs in a row ended badly (pause_after_failures: %d), the last %s',
    n, limit, outcome)
  redis.call('HSET', meta, 'paused', '1', 'paused_why', why)
  redis.call('HSET', rk, 'paused', why)
  local job = job_of(base)
  -- Microseconds, as pause.lua: each pause is an event of its own.
  local ms, us = clock()
  notify(base, {id = job .. '@paused-' .. int(us), job = job, outcome = 'paused', finished = int(ms), paused = why})
  return why, 0
end
-- end pause_after_failures --------------------------------------------
