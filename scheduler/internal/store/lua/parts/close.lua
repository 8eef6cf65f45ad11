-- parts/close.lua: closing runs on behalf of the cluster: retention, reaping, runs never started.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

-- keep makes a decided run's record expire after its retention (ret, ms),
-- and never before its instant (sched, ms) + retention: until then a claim
-- may still decide the run ("too old to decide" counts from the instant),
-- and must find it decided. A run decided before its instant (recorded
-- missed after a loss, closed by a holder that shut down before it) would
-- otherwise lose its record early, and a late claim file a second one. A
-- second more: a claim at the very millisecond is still decided, and must
-- not find the record just expired.
local function keep(rk, ret, sched, now)
  ret = tonumber(ret) or 60000
  redis.call('PEXPIRE', rk, int(math.max(ret, (tonumber(sched) or 0) + ret - now + 1000)))
end

-- never_started rewrites a run the cluster closed lease_lost (its lease ran
-- out) whose holder never started it: the claim's (or admission's) answer
-- never reached the holder, which asks again with the same owner token
-- only because it did not get one. The record and its history entry (a
-- recent one) say missed, err. Only the holder knows it did not start: a
-- holder that started and then died never asks again, and its run stays
-- lease_lost.
local function never_started(base, rk, id, err, now)
  redis.call('HSET', rk, 'outcome', 'missed', 'error', err)
  -- Not a failure of the job: out of the failure streak and the stats.
  unnote_lease_lost(base, redis.call('HGET', rk, 'finished'), now)
  local h = base .. 'history'
  local entry
  for k, item in ipairs(redis.call('LRANGE', h, 0, 99)) do
    local ok, e = pcall(cjson.decode, item)
    if ok and type(e) == 'table' and e.id == id then
      e.outcome, e.error = 'missed', err
      redis.call('LSET', h, k - 1, cjson.encode(e))
      entry = e
      break
    end
  end
  -- One run, one event, the one its record says: missed, not lease_lost.
  unnotify(base, id, 'lease_lost')
  if entry then
    notify(base, entry, 0)
  end
end

-- lease_lost_final reports whether the cluster's lease_lost close of a run
-- (at finished, server ms) stands even if its holder now says it never
-- started the run: the job notifies lease_lost, and the event, held back
-- LEASE_LOST_HOLD after the close, may have been POSTed by now. One run has
-- one final event, the one its record says: from its due time on, the
-- record stays lease_lost, as its event (its error says what the holder
-- said, when it closes it).
local function lease_lost_final(base, finished, now)
  local fin = tonumber(finished)
  if not fin or now < fin + LEASE_LOST_HOLD then
    return false
  end
  local cfg = notify_subs(base)
  local targets = cfg and cfg.on['lease_lost']
  return type(targets) == 'table' and next(targets) ~= nil
end

-- close ends a run on behalf of the cluster (its holder is gone, or it was
-- replaced, or it never started) and files it in the history. The record is
-- kept for its retention: a finished run is never simply deleted, or a
-- replica whose clock lags could claim it again.
local function close(base, rk, outcome, err, now)
  -- A run closed before anything was decided for it (a queued run whose
  -- replica died) carries its outcome as its decision: no field is empty.
  local d = redis.call('HMGET', rk, 'decision', 'ret', 'sched')
  if not d[1] or d[1] == '' then
    redis.call('HSET', rk, 'decision', outcome)
  end
  redis.call('HSET', rk, 'outcome', outcome, 'finished', int(now), 'error', err)
  local ended = 0
  if d[1] == 'started' then
    local _
    _, ended = tally(base, rk, outcome)
  end
  keep(rk, d[2], d[3], now)
  push_history(base, rk, ended)
end

-- reap frees slots whose lease expired and queue places whose waiter stopped
-- polling, closing their records: a replica that died mid-run leaves a
-- lease_lost record, never a run that looks alive forever. A queued manual
-- run whose replica died goes back to the pending requests.
local function reap(base, now)
  local slots, waiting, queue = base .. 'slots', base .. 'waiting', base .. 'queue'
  local dead = redis.call('ZRANGEBYSCORE', slots, '-inf', now)
  for _, id in ipairs(dead) do
    local rk = run_key(base, id)
    if redis.call('HGET', rk, 'outcome') == 'running' then
      close(base, rk, 'lease_lost', 'lease expired: its replica stopped renewing it', now)
    end
  end
  if #dead > 0 then
    expire(slots, now)
    for _, id in ipairs(dead) do
      unhold(base, run_key(base, id), id)
    end
  end
  local gone = redis.call('ZRANGEBYSCORE', waiting, '-inf', now)
  local floor
  for _, id in ipairs(gone) do
    redis.call('ZREM', queue, id)
    local rk = run_key(base, id)
    local w = redis.call('HMGET', rk, 'outcome', 'kind', 'sched')
    if w[1] == 'waiting' then
      if w[2] == 'm' and w[3] then
        -- A manual run goes back to the pending requests, with its request
        -- time: someone asked for it, and another replica runs it.
        redis.call('DEL', rk)
        redis.call('ZREM', base .. 'mqueue', id)
        redis.call('ZADD', base .. 'manual', w[3], id)
        redis.call('PEXPIRE', base .. 'manual', META_TTL)
      else
        -- Scheduled before the data-loss floor, it may have been admitted
        -- and run on the data that was lost (a failover to a stale copy):
        -- its place here is stale, not its replica gone.
        floor = floor or tonumber(redis.call('HGET', base .. 'meta', 'floor')) or 0
        if (tonumber(w[3]) or 0) < floor then
          close(base, rk, 'missed', 'Redis lost data (a failover to a copy that missed writes, a restart or a flush) ' ..
            'after this run could have been admitted: its queue place is stale, and it is not started again', now)
        else
          close(base, rk, 'missed', 'its replica stopped waiting for a slot', now)
        end
      end
    end
  end
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', waiting, '-inf', now)
  end
end
