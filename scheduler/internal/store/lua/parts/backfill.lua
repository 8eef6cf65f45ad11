-- parts/backfill.lua: a job's backfill state.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

-- Backfill (Control.Backfill): one request per job at a time, in the job's
-- backfill hash (id, from, to, last instant, parallel, total, cursor: the
-- latest instant taken, counts decided/started/skipped/already/succeeded/
-- failed, cancelled, error, created, finished, keep; seen: the filing
-- time of the newest history entry bf_seen read), the ids of its runs
-- in flight in the job's bfruns set, and the instants taken back after
-- the cursor passed them (undo.lua: min_replicas_ack) in its bfredo zset
-- (instant ms -> instant ms), at most parallel of them. claim.lua (kind b)
-- takes the instants.

-- bf_prune drops the backfill's runs that ended from its set, counting how
-- they ended, and returns how many are still in flight.
local function bf_prune(base)
  local bk, runs = base .. 'backfill', base .. 'bfruns'
  for _, id in ipairs(redis.call('SMEMBERS', runs)) do
    local o = redis.call('HGET', run_key(base, id), 'outcome')
    if o ~= 'running' and o ~= 'waiting' then
      redis.call('SREM', runs, id)
      if o == 'succeeded' then
        redis.call('HINCRBY', bk, 'succeeded', 1)
      else
        redis.call('HINCRBY', bk, 'failed', 1)
      end
    end
  end
  return redis.call('SCARD', runs)
end

-- BF_RERUN: how a run decided without starting ends, which a backfill
-- decides again (claim.lua's claim_backfill); any other outcome means the
-- run started (or holds its decision: queued).
local BF_RERUN = {missed = true, skipped_overlap = true, skipped_paused = true, skipped_blackout = true}

-- bf_seen notes in the job's bfseen hash the scheduled runs (not manual)
-- of instants from..last (ms) that the history says started: a run's
-- record is kept only its retention (max(2 x interval, skew + deadline)),
-- so for a job that runs often a backfill finds no record of an instant
-- that ran seconds ago, and must not start it again. since (server ms):
-- only the entries filed since (the history is newest first, each entry
-- stamped when filed), or all of them (nil: once, when the backfill
-- starts; at most the history_limit the list is trimmed to). Returns the
-- newest entry's filing time (ms), for the next call's since: each entry
-- is read about once per backfill, not once per instant.
local function bf_seen(base, from, last, since)
  local h, seen = base .. 'history', base .. 'bfseen'
  local newest, off, step = since, 0, 16
  while true do
    local items = redis.call('LRANGE', h, off, off + step - 1)
    for _, item in ipairs(items) do
      local ok, e = pcall(cjson.decode, item)
      if ok and type(e) == 'table' then
        local filed = tonumber(e.finished)
        if since and filed and filed < since then
          return newest
        end
        if filed and (not newest or filed > newest) then
          newest = filed
        end
        local at = tonumber(e.sched)
        if e.kind ~= 'm' and at and at >= from and at <= last and e.outcome and not BF_RERUN[e.outcome] and
            type(e.id) == 'string' then
          redis.call('HSET', seen, e.id, e.outcome)
          redis.call('PEXPIRE', seen, META_TTL)
        end
      end
    end
    if #items < step then
      return newest
    end
    off, step = off + step, math.min(step * 4, 1000)
  end
end

-- bf_settle prunes, and marks the backfill finished once nothing is left
-- to take (its cursor reached its last instant, or it was cancelled) and
-- nothing it started is in flight; a finished backfill's state is kept
-- for its keep time, for status. Returns the runs in flight.
local function bf_settle(base, now)
  local bk = base .. 'backfill'
  local inflight = bf_prune(base)
  local b = redis.call('HMGET', bk, 'cursor', 'last', 'cancelled', 'finished', 'keep')
  if b[1] and not b[4] and inflight == 0 and (b[3] == '1' or tonumber(b[1]) >= tonumber(b[2]) and
      redis.call('EXISTS', base .. 'bfredo') == 0) then
    redis.call('HSET', bk, 'finished', int(now))
    redis.call('PEXPIRE', bk, tonumber(b[5]) or 86400000)
    redis.call('DEL', base .. 'bfseen')
  end
  return inflight
end
