-- Claims runs: for each, in one atomic step, checks that this replica may
-- decide it now (server time inside the run's window, not before the
-- data-loss floor), de-duplicates it, checks pause, takes a concurrency slot
-- (or queues, skips, or replaces per the overlap policy), issues the fencing
-- token and records the decision. Many runs may be claimed in one call.
--
-- KEYS[i]  meta key of run i's job
-- ARGV[1]  replica id
-- ARGV[2]  max clock skew, ms
-- ARGV[3]  waiter ttl, ms
-- ARGV[4]  a fresh random epoch, used if a job's meta must be created
-- ARGV[5]  claim ahead, ms: how long before its instant a run may be claimed
-- ARGV[6]  1: check the store against the highest fencing token the replica
--          has seen (lost writes); 0: do not (a Redlock master: the token
--          seen may come from another master)
-- ARGV[7]  1: the store began empty with this process (check_epoch's born)
-- then 3 fields per run, starting at ARGV[7 + 3*(i-1) + 1]:
--   1 run key suffix (the run id is "<job>@<suffix>")   2 owner token
--   3 the claim's other terms, separated by '|':
--      kind: s scheduled, c catch-up, m manual, x record missed (the
--      replica's clock says its deadline passed; Redis' decides: before
--      it, x is claimed as s), o record missed for an outage (due while no
--      replica claimed it; never started), b backfill (see
--      claim_backfill) | scheduled
--      instant, ms | fire instant (scheduled + jitter), ms | lease ms |
--      concurrency | overlap: skip|wait|replace | max wait ms | starting
--      deadline ms | record retention ms | history limit | paused by the
--      replica's table: 1|0 | epoch the replica knows, or "" | highest
--      fencing token the replica has seen | catch-up window ms | catch-up:
--      (and outage) the last decided instant the replica saw when it found
--      the gap, ms;
--      backfill: the backfill's cursor the replica saw, ms |
--      queue ticket if the run must wait, or "" for the next in arrival
--      order (Redlock passes one derived from the run, so that every
--      master orders its queue alike) | catch-up and outage: Redis' time when the
--      replica read the last decided instant, ms; backfill: the
--      backfill's id (0 otherwise) |
--      pause_after_failures (0: never), kept in the run's record as pf |
--      1 if the instant is inside one of the job's blackout windows (every
--      replica computes it alike), else 0 | the size of the job's pool
--      (0: the job has no pool) | the job's pool, or "" | the pool slot:
--      "" this script takes it (one Redis: it may reach the pool's key),
--      1 the replica holds it for this run already, 0 the replica found the
--      pool full (Redis Cluster: pool.lua, in the pool's own hash slot)
--   A lost race reads only the first two: Redis makes a Lua string of every
--   argument, so few of them keep the common answer cheap.
-- Returns one array per run, all strings:
--   {"started", epoch, fencing token, server time ms, slot (1..concurrency)}
--   {"decided", epoch, outcome, fencing token or "", replica}
--                                             someone decided it already; a
--                                             lost race answers the same as one
--                                             string, "decided||outcome|fence|replica"
--                                             (the winner's token: the loser
--                                             learns it, as from a heartbeat)
--   {"skipped_overlap"|"skipped_paused"|"skipped_blackout"|"missed", epoch}
--                                             decided now, by us
--   {"expired", epoch}                        a manual run this claim started
--                                             earlier (its answer lost), closed
--                                             lease_lost since: never started,
--                                             to hand back (undo.lua drop);
--                                             once its lease_lost event is due
--                                             (lease_lost_final): decided
--   {"waiting", epoch, place in queue}        overlap: wait; poll with admit.lua
--   {"early", epoch, server time ms}          too early on Redis' clock: ask again
--   {"later", epoch, server time ms}          claimed ahead of the instant, but
--                                             not startable yet: ask again at it
--   {"refused", epoch, reason}                not ours to decide
-- protocol: head=7 per_run=3 answers=started,decided,skipped_overlap,skipped_paused,skipped_blackout,missed,expired,waiting,early,later,refused (checked against protocol.go by TestProtocolHeaders)
local F = 3
local TERMS = '^' .. string.rep('([^|]*)|', 21) .. '([^|]*)$'
local replica, skew, waiter_ttl, fresh = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local ahead_ms = tonumber(ARGV[5])
local check_fence = ARGV[6] == '1'
local born = ARGV[7] == '1'
-- Redis' clock, read once per call by the first claim that needs it: a
-- batch of lost races reads only the runs' records.
local now, now_us, now_s
local function tick()
  if not now then
    now, now_us = clock()
    now_s = int(now)
  end
end

-- Why a run below the data-loss floor is missed. Built once per call:
-- Lua concatenates at run time, and a won claim would build them per run.
local LOSS = 'Redis lost data (a restart without persistence, a flush, or a failover to a copy that missed ' ..
  'writes) after this run could have started: it is not started again'
local LOSS_UNSURE = 'Redis held no state of this job when this run was due: a new job (or key prefix), or Redis ' ..
  'lost data (a restart without persistence, a flush, or a failover to a copy that missed writes) that no running ' ..
  'replica saw; a run that could have started before is not started, so that it cannot run twice'

-- rerun: a backfill decides again a run decided without starting (see
-- claim_backfill); the old record is replaced once the new decision is
-- made.
local function claim(meta, a, rerun)
  -- Most claims are lost races: the run is decided already. That answer
  -- costs one read, and only the arguments it needs are looked at first.
  local base = string.sub(meta, 1, -5)
  local suffix, owner = ARGV[a + 1], ARGV[a + 2]
  local rk = base .. 'run:' .. suffix
  -- Only what a lost race answers: each field read is a Lua string (or
  -- false) made, and a lost race is two of every three claims. The
  -- decision and the slot number matter only to our own retry, below.
  local d = redis.call('HMGET', rk, 'outcome', 'replica', 'owner', 'fence')
  if d[1] and not rerun then
    if d[3] == owner then
      tick()
      local more = redis.call('HMGET', rk, 'decision', 'slot')
      d[5], d[6] = more[1], more[2]
      -- Our own decision, asked again: go-redis retried a call whose reply
      -- was lost. Answer as the first time, or nobody would run the run —
      -- but only while it still holds: a run that started and has ended
      -- since (its lease ran out while the answer was lost) is decided, and
      -- must never be started again.
      if d[1] == 'running' or d[1] == 'waiting' then
        -- An answer that lets a run start (or keeps its queue place) is
        -- always a write, as in admit.lua: with min_replicas_ack, the WAIT
        -- after it must cover the first call's writes, which may never have
        -- reached a replica. Redis >= 7.2 counts only propagated writes.
        redis.call('PEXPIRE', meta, META_TTL)
      end
      if d[1] == 'running' then
        return {'started', '', d[4], now_s, d[6] or '1'}
      elseif d[1] == 'waiting' then
        local id = job_of(base) .. '@' .. suffix
        return {'waiting', '', int((redis.call('ZRANK', base .. 'queue', id) or 0) + 1)}
      elseif d[5] == 'started' and (d[1] == 'missed' or d[1] == 'lease_lost' and
          redis.call('HGET', rk, 'closed_by') ~= 'holder' and
          not lease_lost_final(base, redis.call('HGET', rk, 'finished'), now)) then
        -- Started by the first call, whose answer came after the client's
        -- deadline; its lease ran out meanwhile and the cluster closed it.
        -- Asked again, its holder never had the answer: it never ran.
        if d[1] == 'lease_lost' and redis.call('HGET', rk, 'kind') == 'm' then
          -- Someone asked for a manual run: its holder hands it back to
          -- the pending requests (undo.lua takes the close back).
          return {'expired', ''}
        end
        if d[1] == 'lease_lost' then
          never_started(base, rk, job_of(base) .. '@' .. suffix,
            'never started: its claim was answered after its replica stopped waiting, and its lease ran out before the claim was asked again', now)
        end
        return {'missed', ''}
      elseif d[5] == 'started' or d[5] == '' then
        return {'decided', '', d[1], d[4] or '', d[2] or ''}
      end
      return {d[5], ''}
    end
    -- A lost race, the most common answer of all, in one string: Redis
    -- builds no table for it, and the replica parses no array.
    return 'decided||' .. d[1] .. '|' .. (d[4] or '') .. '|' .. (d[2] or '')
  end

  tick()
  local job = job_of(base)
  local id = job .. '@' .. suffix
  local kind, sched_s, fire_s, lease_s, limit_s, overlap, max_wait_s, deadline_s, ret_s, hlimit, lpaused, known,
    ffloor, cwindow_s, cbase_s, ticket, read_s, pf, blackout, psize, pool, pgrant = string.match(ARGV[a + 3], TERMS)
  if not kind then
    return {'refused', '', 'malformed claim terms'}
  end
  local sched, fire = tonumber(sched_s), tonumber(fire_s)
  local lease, limit = tonumber(lease_s), tonumber(limit_s)
  local max_wait, deadline, retention = tonumber(max_wait_s), tonumber(deadline_s), tonumber(ret_s)
  local cwindow, cbase = tonumber(cwindow_s), tonumber(cbase_s)
  -- Every check that can fail comes before the first write: a claim that
  -- cannot be decided leaves nothing behind, and no other run of the batch
  -- is touched.
  if not (sched and fire and lease and limit and max_wait and deadline and retention and cwindow and cbase and
      tonumber(psize)) or limit < 1 then
    return {'refused', '', 'malformed claim terms'}
  end
  -- The pool's key, when this script takes the run's pool slot itself.
  local pk
  if pool ~= '' and pgrant == '' then
    pk = pool_key(base, pool)
  end

  local seen = 0
  if check_fence then
    seen = ffloor
  end
  local epoch, floor, paused, last, fence_last, lost, unsure, kept = check_epoch(meta, known, now, skew + ahead_ms, fresh, seen, born, true)

  -- The record of a run of the schedule is kept at least as long as any
  -- table's claims need (parts/kept.lua): kret, not only this table's
  -- retention. The checks below keep to this table's own retention.
  local kret, kset = retention, nil
  if kind ~= 'm' and kind ~= 'b' and not (unsure and sched < floor) then
    -- A run may be decided from claim ahead (at most the skew) before its
    -- instant, on a clock within the skew of Redis'; a catch-up's (or an
    -- outage's) instant was undecided when the replica read the job's
    -- last decided instant.
    local from = sched - 2 * skew
    if kind == 'c' or kind == 'o' then
      from = math.max(from, tonumber(read_s) or 0)
    end
    local gone
    kret, gone, kset = kept_retention(kept, retention, sched, from, now, last)
    if gone then
      -- The longer retention is kept all the same (a write that decides
      -- nothing, whole by itself): from now on the other table's records
      -- last as long as this one's claims need, and its later runs are
      -- found decided rather than refused.
      if #kset > 0 then
        redis.call('HSET', meta, unpack(kset))
      end
      -- The reason is protocol.go's ReasonOtherTable.
      return {'refused', epoch, 'may have been decided under another job table, which keeps records for less ' ..
        'time: not started again'}
    end
  end
  local kret_s = ret_s
  if kret ~= retention then
    kret_s = int(kret)
  end
  -- with appends the kept retention's fields to a write of the job's meta.
  local function with(set)
    if kset then
      for _, v in ipairs(kset) do
        set[#set + 1] = v
      end
    end
    return set
  end

  -- The run's record. id and job are not stored: they are in its key.
  local rkind = (kind == 'x' or kind == 'o') and 's' or kind
  -- Manual and backfill runs leave the job's last decided instant alone:
  -- catch-up reads it as "everything up to here was decided".
  local moves_last = kind ~= 'm' and kind ~= 'b'
  -- decide records a decision that starts nothing (skip, miss) and files
  -- it (parts/history.lua's file: note, push_entry, notify), reading the job's
  -- meta once and writing it once, as complete.lua does: a replica that
  -- fell behind decides many runs so, and each must cost less than the
  -- run it did not start.
  local function decide(outcome, err)
    if rerun then
      redis.call('DEL', rk)
    end
    redis.call('HSET', rk, 'kind', rkind, 'sched', sched_s, 'replica', replica, 'owner', owner, 'ret', kret_s,
      'hl', hlimit, 'decision', outcome, 'outcome', outcome, 'finished', now_s, 'error', err)
    keep(rk, kret, sched, now)
    local m = redis.call('HMGET', meta, 'h:n', 'h:s', 'h:ok', 'notify', 'h:f')
    local rec = {id = id, job = job, kind = rkind, sched = sched_s, decision = outcome, outcome = outcome,
      replica = replica, finished = now_s, error = err}
    local set = push_counted(base, cjson.encode(rec), outcome, outcome, hlimit, m, m[5])
    set[#set + 1], set[#set + 2] = 'at:' .. outcome, now_s
    if moves_last and sched > last then
      set[#set + 1], set[#set + 2] = 'last', sched_s
    end
    redis.call('HSET', meta, unpack(with(set)))
    if m[4] == '1' then
      notify(base, rec)
    end
    return {outcome, epoch}
  end

  local loss = LOSS
  -- A scheduled run claimed after its starting deadline (below).
  local late = false
  if unsure then
    loss = LOSS_UNSURE
  end
  if kind == 'm' then
    if not redis.call('ZSCORE', base .. 'manual', id) then
      return {'refused', epoch, 'no pending manual request'}
    end
    redis.call('ZREM', base .. 'manual', id)
    -- A request made before the loss was noticed may have run already: a
    -- stale copy can still hold it pending. A Redlock replica sends every
    -- master the request time one master gave it; the others' clocks may
    -- differ by the skew (and a master's loss is outvoted anyway).
    local slack = 0
    if not check_fence then
      slack = skew
    end
    if sched < lost - slack then
      return decide('missed', loss)
    end
  else
    -- A backfill is asked for instant by instant and trusts the records
    -- Redis holds, but not across a loss: an instant before the floor of a
    -- sure loss may have run, its record and history entry gone with the
    -- data. It is not run: within its record's retention it is recorded
    -- missed as its scheduled claim would be; older, nothing is written
    -- (below). Either way the backfill counts it skipped and moves on.
    -- Under an unsure floor (a new job, most likely) the backfill runs the
    -- job's past.
    if sched < floor and not (kind == 'b' and unsure) then
      if unsure then
        -- No replica that asked had seen the job: most likely a new job
        -- (or cluster), whose instants before its state existed were never
        -- its to run. The floor still keeps them from starting; nothing is
        -- recorded, so no miss is counted, alerted or notified.
        -- The reason is protocol.go's reasonBeforeState.
        return {'refused', epoch, 'due before the job\'s state existed'}
      end
      if rerun then
        -- A backfill's instant decided before without starting: its record
        -- stands (deciding it again would file, count and notify a second
        -- decision of the run).
        return {redis.call('HGET', rk, 'outcome'), epoch}
      end
      if now > sched + retention then
        if kind == 'b' then
          -- Past its record's retention, a record made after the loss
          -- (the run recorded missed when a replica noticed it, say) may
          -- have expired since: deciding it again would file, count and
          -- notify a second decision of the run. Nothing is written; the
          -- backfill counts it skipped.
          return {'decided', '', 'missed', '', ''}
        end
        return {'refused', epoch, 'too old to decide'}
      end
      return decide('missed', loss)
    end
    if kind == 's' or kind == 'x' then
      -- A replica records a run missed (x) when its own clock says the
      -- starting deadline passed; Redis' clock decides, as for a claim: a
      -- replica whose clock runs ahead must not record a future run missed.
      -- Redis' clock, not the replica's, says when a run may be claimed:
      -- from claim_ahead before its instant. A replica whose clock runs
      -- ahead asks again then; every run starts at its instant as Redis
      -- sees it, whatever the replicas' clocks say.
      if now < fire - ahead_ms then
        return {'early', epoch, int(now)}
      end
      if now > fire + deadline + skew then
        if now > sched + retention then
          return {'refused', epoch, 'too old to decide'}
        end
        -- Missed, unless it could not have started anyway: the blackout
        -- and pause checks below decide it first, however late (a replica
        -- frozen, or Redis out of reach, past its deadline).
        late = true
      end
    elseif kind == 'o' then
      -- Due while no replica claimed it, before the instant the asking
      -- replica's dispatcher began with (misses.go): recorded missed, never
      -- started. As for catch-up, the replica's reading of the gap holds
      -- only while the records decided since are kept. A record made
      -- older than its instant's retention is kept its retention from now
      -- (keep), and moves the last decided instant past it.
      if fire > now then
        return {'refused', epoch, 'not due yet on Redis\' clock'}
      end
      if sched <= cbase then
        return {'refused', epoch, 'decided before the outage was read'}
      end
      if now > (tonumber(read_s) or 0) + retention - skew then
        return {'refused', epoch, 'the gap was read longer ago than the record retention'}
      end
    elseif kind == 'b' then
      -- A backfill takes instants past on Redis' clock.
      if fire > now then
        return {'refused', epoch, 'not due yet on Redis\' clock'}
      end
    elseif kind == 'c' then
      -- Catch-up is for instants past on Redis' clock, whatever the
      -- replica's clock says.
      if fire > now then
        return {'refused', epoch, 'not due yet on Redis\' clock'}
      end
      if sched < now - cwindow - skew then
        return {'refused', epoch, 'outside the catch-up window'}
      end
      -- Instants after the last one decided when the replica looked were
      -- undecided then; a record may have appeared since (another replica
      -- catching up, or this very claim retried), which the check above
      -- finds. Anything at or before it was decided, record or not.
      if sched <= cbase then
        return {'refused', epoch, 'decided before the catch-up began'}
      end
      -- That reading only holds while the records of what was decided
      -- since are kept: a run decided after it keeps its record for its
      -- retention at least. A replica frozen longer than that between its
      -- heartbeat and this claim would find an expired record's run
      -- undecided, and start it again.
      if now > (tonumber(read_s) or 0) + retention - skew then
        return {'refused', epoch, 'the gap was read longer ago than the record retention'}
      end
    end
  end

  -- A replica may claim a scheduled run a little before its instant (claim
  -- ahead), so the job starts on time however many runs share the instant.
  -- Before the instant a claim may only start the run: anything else
  -- (paused, every slot busy) is decided at the instant, as it would have
  -- been without claiming ahead.
  local ahead = (kind == 's' or kind == 'x') and now < fire

  if kind ~= 'm' and blackout == '1' then
    if ahead then
      return {'later', epoch, now_s}
    end
    return decide('skipped_blackout', 'inside a blackout window')
  end
  if kind ~= 'm' and (paused == '1' or lpaused == '1') then
    if ahead then
      return {'later', epoch, now_s}
    end
    return decide('skipped_paused', 'job paused')
  end
  if late then
    return decide('missed', 'not claimed before its starting deadline')
  end
  if kind == 'o' then
    return decide('missed', 'no replica was up to run it (every replica was down, or none could reach Redis); ' ..
      'not run: a catchup_window runs such runs')
  end

  -- Free slots, after reaping expired holders and waiters (only when there
  -- are any: an idle job costs one EXISTS here, as Redis deletes an empty
  -- sorted set).
  local slots, queue = base .. 'slots', base .. 'queue'
  local held, queued = 0, 0
  if redis.call('EXISTS', slots, queue) > 0 then
    reap(base, now)
    held, queued = redis.call('ZCARD', slots), redis.call('ZCARD', queue)
  end
  -- A pooled job also needs a slot of its pool; a run that would wait
  -- queues behind the job's runs already waiting for one.
  local pfree = pool_free(pk, psize, now)
  if pgrant == '0' then
    pfree = 0
  end
  local pool_full = pfree <= 0 or (overlap == 'wait' and queued > 0 and pool ~= '')
  if held + queued >= limit or pool_full then
    -- Said only when the run does not start: a number in a string is a
    -- conversion, and most claims start.
    local full = 'all ' .. limit .. ' concurrency slots busy'
    if held + queued < limit then
      full = 'all ' .. psize .. ' slots of pool ' .. pool .. ' busy'
    end
    if kind == 'b' then
      -- A backfill runs within the job's concurrency and its pool: it
      -- takes the instant again when a slot is free.
      return {'refused', epoch, full}
    end
    if ahead then
      return {'later', epoch, now_s}
    end
    if overlap == 'wait' then
      if ticket == '' then
        ticket = redis.call('HINCRBY', meta, 'ticket', 1)
      end
      -- The ticket stays in the record: a run taken back out of a slot
      -- (undo.lua) returns to its place.
      redis.call('HSET', rk, 'kind', rkind, 'sched', sched_s, 'replica', replica, 'owner', owner, 'ret', kret_s,
        'hl', hlimit, 'pf', pf, 'decision', '', 'outcome', 'waiting', 'wait_until', int(now + max_wait), 'ticket', ticket)
      redis.call('PEXPIRE', rk, kret + max_wait)
      local mset = {}
      if moves_last and sched > last then
        mset = {'last', sched_s}
      end
      mset = with(mset)
      if #mset > 0 then
        redis.call('HSET', meta, unpack(mset))
      end
      redis.call('ZADD', queue, ticket, id)
      redis.call('ZADD', base .. 'waiting', now + waiter_ttl, id)
      if kind == 'm' then
        redis.call('ZADD', base .. 'mqueue', int(now + max_wait), id)
        redis.call('PEXPIRE', base .. 'mqueue', META_TTL)
      end
      return {'waiting', epoch, int(redis.call('ZRANK', queue, id) + 1)}
    elseif overlap == 'replace' and held > 0 then
      -- The oldest run in flight, on whichever replica, is closed as
      -- replaced; its holder learns it at its next renewal and cancels.
      -- Only a run of an earlier instant that has started: a late claim
      -- of an earlier instant (after an outage, or answered late) does not
      -- stop a later one, and a run claimed ahead, not started yet, would
      -- start at its instant all the same, its replacement beside it.
      -- With the pool full, only a run holding a slot of this very pool
      -- (in this script's hands) makes room by ending.
      local oldest, oldest_start
      for _, other in ipairs(redis.call('ZRANGE', slots, 0, -1)) do
        local o = redis.call('HMGET', run_key(base, other), 'started', 'sched', 'pool')
        local st, at = tonumber(o[1]) or 0, tonumber(o[2]) or 0
        if st <= now and at < sched and (not oldest or st < oldest_start) and
            (pfree > 0 or (pk and o[3] == pk)) then
          oldest, oldest_start = other, st
        end
      end
      if not oldest then
        return decide('skipped_overlap', full .. ' with runs of later instants, or of none that frees the pool' ..
          ' (replace stops only older runs)')
      end
      release(base, oldest)
      held = held - 1
      local vk = run_key(base, oldest)
      redis.call('HSET', vk, 'replaced_by', id)
      close(base, vk, 'replaced', 'replaced by ' .. id, now)
    else
      -- replace stops runs of its own job only: a pool full of other
      -- jobs' runs skips.
      return decide('skipped_overlap', full)
    end
  end

  -- Start: the record, the slot and the job's token and last instant, in
  -- four writes.
  local f = int(fence_after(now_us, fence_last, ffloor))
  local slot = take_slot(base, held)
  -- Claimed ahead, the job starts at its instant.
  local started = now_s
  if ahead then
    started = int(fire)
  end
  if rerun then
    redis.call('DEL', rk)
  end
  local rf = {'kind', rkind, 'sched', sched_s, 'replica', replica, 'owner', owner, 'ret', kret_s,
    'hl', hlimit, 'pf', pf, 'decision', 'started', 'outcome', 'running', 'fence', f, 'started', started, 'slot', slot}
  if ticket ~= '' then
    rf[#rf + 1], rf[#rf + 2] = 'ticket', ticket
  end
  if pk then
    rf[#rf + 1], rf[#rf + 2] = 'pool', pk
  end
  redis.call('HSET', rk, unpack(rf))
  redis.call('PEXPIRE', rk, lease + kret)
  hold(base, id, now + lease, false, pk)
  if moves_last and sched > last then
    redis.call('HSET', meta, unpack(with({'fence', f, 'last', sched_s})))
  else
    redis.call('HSET', meta, unpack(with({'fence', f})))
  end
  -- Number 1 (most runs) as a literal: no string.format.
  return {'started', epoch, f, now_s, slot == 1 and '1' or int(slot)}
end

-- claim_backfill claims the next instant of the job's backfill: only the
-- instant right after its cursor, so that replicas taking instants at the
-- same time never take the same one nor skip one; only while the backfill
-- goes on (not cancelled), the job is not paused (the backfill waits) and
-- fewer than its parallel runs are in flight. An instant that started
-- already (running, or ended any way) is counted and not run again; one
-- decided without starting (RERUN: missed, skipped) is what a backfill is
-- for, and is decided again. A run the claim starts, or a decision it
-- records, moves the cursor on. Instants a min_replicas_ack undo took back
-- (undo.lua; the job's bfredo set) are taken again, before any new one.
local RERUN = {missed = true, skipped_overlap = true, skipped_paused = true, skipped_blackout = true}
local function claim_backfill(meta, a)
  local base = string.sub(meta, 1, -5)
  local suffix, owner = ARGV[a + 1], ARGV[a + 2]
  local rk = base .. 'run:' .. suffix
  local kind, sched_s, _, _, _, _, _, _, _, _, lpaused, _, _, _, cursor_s, _, gen = string.match(ARGV[a + 3], TERMS)
  if not kind then
    return {'refused', '', 'malformed claim terms'}
  end
  local bk, redo = base .. 'backfill', base .. 'bfredo'
  local b = redis.call('HMGET', bk, 'id', 'cursor', 'last', 'parallel', 'cancelled', 'finished', 'from', 'seen')
  if b[1] ~= gen or b[6] then
    return {'refused', '', 'no such backfill going on'}
  end
  local sched, cursor = tonumber(sched_s), tonumber(b[2])
  local id = job_of(base) .. '@' .. suffix
  local d = redis.call('HMGET', rk, 'outcome', 'owner', 'fence', 'replica')
  local retake = redis.call('ZSCORE', redo, sched_s)
  if not retake and cursor == sched and d[1] and d[2] == owner then
    -- This claim asked again (its answer was lost): answered as any claim
    -- is; it was counted the first time.
    local res = claim(meta, a)
    if res[1] == 'started' then
      redis.call('SADD', base .. 'bfruns', id)
    end
    return res
  end
  if b[5] == '1' then
    return {'refused', '', 'backfill cancelled'}
  end
  if not retake then
    if redis.call('EXISTS', redo) == 1 then
      return {'refused', '', 'instants taken back are taken again first'}
    end
    if cursor ~= tonumber(cursor_s) or sched <= cursor or sched > tonumber(b[3]) then
      return {'refused', '', 'backfill instant taken already'}
    end
  end
  -- move: the instant is decided; the cursor moves on to it (or it leaves
  -- the instants to take again).
  local function move(counter)
    if retake then
      redis.call('ZREM', redo, sched_s)
    else
      redis.call('HSET', bk, 'cursor', sched_s)
    end
    redis.call('HINCRBY', bk, 'decided', 1)
    redis.call('HINCRBY', bk, counter, 1)
  end
  if not d[1] then
    -- No record: never decided, or its record expired (kept only its
    -- retention). The history says whether it started: read when the
    -- backfill began, and the entries filed since the last look (bfseen).
    local mark = bf_seen(base, tonumber(b[7]) or 0, tonumber(b[3]), tonumber(b[8]) or 0)
    if mark then
      redis.call('HSET', bk, 'seen', int(mark))
    end
    local o = redis.call('HGET', base .. 'bfseen', id)
    if o then
      move('already')
      return {'decided', '', o, '', ''}
    end
  end
  local rerun = d[1] ~= nil and RERUN[d[1]] and d[2] ~= owner
  if d[1] and not rerun then
    move('already')
    return {'decided', '', d[1], d[3] or '', d[4] or ''}
  end
  if lpaused == '1' or redis.call('HGET', meta, 'paused') == '1' then
    return {'refused', '', 'job paused: the backfill waits'}
  end
  if bf_prune(base) >= tonumber(b[4]) then
    return {'refused', '', 'backfill parallel limit reached'}
  end
  local res = claim(meta, a, rerun)
  local st = res[1]
  if st == 'started' then
    move('started')
    redis.call('SADD', base .. 'bfruns', id)
    redis.call('PEXPIRE', base .. 'bfruns', META_TTL)
  elseif st == 'skipped_overlap' or st == 'skipped_paused' or st == 'skipped_blackout' or st == 'missed' or
      st == 'decided' then
    -- decided: an instant from before a loss, past its record's retention
    -- (claim): not run, nothing written.
    move('skipped')
  end
  return res
end

-- Each run is decided on its own: a run whose claim fails (its keys hold
-- something else, say) is answered refused, and the other runs of the
-- batch are decided as if it were not there. Its own checks come before
-- its writes, so it leaves nothing half decided.
local out = {}
for i = 1, #KEYS do
  local a = 7 + F * (i - 1)
  local fn = claim
  if string.sub(ARGV[a + 3], 1, 2) == 'b|' then
    fn = claim_backfill
  end
  local ok, res = pcall(fn, KEYS[i], a)
  if not ok then
    if type(res) == 'table' then
      res = res.err
    end
    res = {'refused', '', 'claim failed: ' .. tostring(res)}
  end
  out[i] = res
end
return out
