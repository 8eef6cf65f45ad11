-- common.lua is prepended to every scheduler script.
--
-- A job's state is identified by its name alone: every key of a job shares
-- the hash tag {<job>}, whatever the table says (pool, concurrency, ...), so
-- one script may touch them all on Redis Cluster and no table change starts
-- the job afresh in other keys. A pool (pools:) has a key of its own,
-- "<prefix>:{pool:<pool>}:held" (zset run id -> lease expiry, server ms: the
-- pool's slots, held by runs of all its jobs; pool_key). Where one script
-- may reach any key (standalone, Sentinel, the embedded store), the job's
-- scripts take, renew and free a run's pool slot with its job slot; on
-- Redis Cluster the replica takes it first with pool.lua, in the pool's
-- own slot (pool.go).
-- Scripts receive the job's meta key in KEYS and derive the others from it,
-- always inside that tag:
--   meta          hash  epoch, floor, guarded, paused, last, fence; ok, at:<outcome> (see note); notify (see notify);
--                       fails, paused_why (see tally); h:n, h:s, h:ok (see push_entry);
--                       top (see take_slot)
--   run:<suffix>  hash  one run's record (suffix: the RFC 3339 instant, or manual-<id>)
--   slots         zset  run id -> lease expiry (server ms): the concurrency slots
--   nums          zset  slot numbers given back below meta's top (see take_slot)
--   queue         zset  run id -> ticket: runs waiting for a slot, first come first served
--   waiting       zset  run id -> waiter expiry (server ms)
--   history       list  finished run records, newest first, as JSON
--   manual        zset  run id -> request time: manual runs not yet decided
--   mqueue        zset  run id -> end of its wait (server ms): manual runs
--                       queued for a slot (trigger.lua's bound counts them)
--   backfill      hash  the job's backfill (see bf_prune below)
--   bfruns        set   run ids of the backfill's runs in flight
--   bfredo        zset  instants of the backfill taken back, to take again
--   bfseen        hash  run id -> outcome: the instants of the backfill's
--                       range that started already, read from the history
--                       (bf_seen): their records may have expired
--   retries       zset  "<new run id>\n<run id>\n<who>" -> request time: the
--                       job's latest retries (retry.lua), at most 100
--
-- All times are the server's (TIME), never a replica's, except the scheduled
-- instants themselves, which every replica computes identically.

-- How long a job's meta and history outlive the last replica that knows the
-- job: 30 days.
local META_TTL = 2592000000

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- clock and int are internal/fencing's fence.lua (prepended to every
-- script): the server time in ms and µs from one TIME call; an integer as
-- plain digits (tostring() and cjson would round 16-digit fencing tokens).
local clock, int = fence_clock, fence_int

local function base_of(meta)
  return string.sub(meta, 1, -5)
end

-- job_of is the job's name in its keys' base ("<prefix>:{<job>}:").
local function job_of(base)
  return string.match(base, '{([^{}]*)}:$')
end

-- pool_key is the key of pool name's slots, beside the job's keys (base):
-- "<prefix>:{pool:<name>}:held".
local function pool_key(base, name)
  return string.match(base, '^(.*):{[^{}]*}:$') .. ':{pool:' .. name .. '}:held'
end

local function expire(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
end

-- Slots: a run in flight holds one of its job's slots (base .. 'slots'),
-- numbered (take_slot), and one of its pool's when it took one under the
-- same lease: its record's field pool names that key (a pool slot taken by
-- the replica on Redis Cluster is not in the record: the replica renews and
-- frees it, pool.go). hold takes or extends both (pk: the pool key, or nil),
-- release frees both, reap frees those whose lease ran out. The record, not
-- the replica's table, says which pool a run holds: a table that moved the
-- job out of its pool still renews and frees the slot its run took.
local function hold(base, id, expiry, xx, pk)
  if xx then
    redis.call('ZADD', base .. 'slots', 'XX', expiry, id)
    if pk then
      redis.call('ZADD', pk, 'XX', expiry, id)
    end
    return
  end
  redis.call('ZADD', base .. 'slots', expiry, id)
  if pk then
    redis.call('ZADD', pk, expiry, id)
    redis.call('PEXPIRE', pk, META_TTL)
  end
end

-- unhold gives back what run id (record rk) held besides its job slot, once
-- that slot is gone: its pool slot, and its slot number (to nums, unless
-- none is held any more: numbers then start again from 1, and nums stays
-- as small as the most runs ever held at once). Without meta's top, the
-- run was the only holder, of number 1 (take_slot): nothing to give back.
-- k: what the caller read already ({slot, pool key, top}), or nil.
local function unhold(base, rk, id, k)
  if not k then
    k = redis.call('HMGET', rk, 'slot', 'pool')
    k[3] = redis.call('HGET', base .. 'meta', 'top')
  end
  if k[2] then
    redis.call('ZREM', k[2], id)
  end
  if not k[3] then
    return
  end
  if redis.call('EXISTS', base .. 'slots') == 0 then
    redis.call('DEL', base .. 'nums')
    redis.call('HDEL', base .. 'meta', 'top')
  elseif k[1] then
    redis.call('ZADD', base .. 'nums', k[1], k[1])
  end
end

-- release frees run id's slots (k: as unhold's). Only the call that removes
-- its job slot gives its number back: a number is never freed twice, so
-- never held twice.
local function release(base, id, k)
  if redis.call('ZREM', base .. 'slots', id) == 1 then
    unhold(base, base .. 'run:' .. string.match(id, '@(.*)$'), id, k)
  end
end

-- pool_free is how many slots of pool pk (size: the pool's size in the
-- asking replica's table) are free at now, after freeing those whose lease
-- ran out: a holder that died gives its pool slot back when its lease ends,
-- whichever job's claim notices. Its own record is closed lease_lost by its
-- own job's reap. nil pk: no pool, no limit.
local function pool_free(pk, size, now)
  if not pk or (tonumber(size) or 0) <= 0 then
    return math.huge
  end
  expire(pk, now)
  return tonumber(size) - redis.call('ZCARD', pk)
end

local function run_key(base, id)
  return base .. 'run:' .. string.match(id, '@(.*)$')
end

local RECORD = {'id', 'job', 'kind', 'sched', 'decision', 'outcome', 'replica', 'fence',
  'started', 'finished', 'attempts', 'error', 'output', 'paused', 'slot', 'cancelled_by'}

-- Notifications (scheduler/notify.go; docs/monitoring.md). Per job:
--   notify:on  string  JSON {"on": {event: [target, ...]}, "max": N}: who wants
--                      which event, written by the replicas from their table,
--                      with the meta's flag notify = 1 (no flag: no
--                      subscription, and nothing reads these keys)
--   notify:q   zset    delivery "<target> <run id>:<event>" -> when it is due
--                      next (server ms); a replica taking it pushes it one
--                      lease ahead, so a replica that dies holding it hands
--                      it on when that lease ends
--   notify:d   hash    delivery -> the event as JSON; delivery.."\no" -> its
--                      holder, delivery.."\nn" -> attempts; "#dropped" ->
--                      events refused because the queue was full
-- notify queues rec's event (a closed run's record, a table of strings) for
-- every target that wants it, in the script that closes the run: an event
-- is never lost between the close and the queue. ended is the failure
-- streak (meta field fails, see tally) a succeeded rec ended: a success
-- that ended one is the event recovered.
-- A lease_lost event is due LEASE_LOST_HOLD ms after the close: a run the
-- cluster closed lease_lost may turn out never to have started (its holder
-- asks again, see never_started), and its one event is then missed (or,
-- for a manual run handed back, none); the event queued for it is replaced
-- while still held back.
local LEASE_LOST_HOLD = 15000

-- notify_subs reads the job's notification subscriptions (notify:on), or nil.
-- The meta's notify flag says whether the job has a subscription, so a job
-- without notifications never reads their keys.
local function notify_subs(base)
  if redis.call('HGET', base .. 'meta', 'notify') ~= '1' then
    return nil
  end
  local sub = redis.call('GET', base .. 'notify:on')
  if not sub then
    return nil
  end
  local ok, cfg = pcall(cjson.decode, sub)
  if not ok or type(cfg) ~= 'table' or type(cfg.on) ~= 'table' then
    return nil
  end
  return cfg
end

-- unnotify takes back run id's queued ev event, for every target: the run's
-- record changed its final outcome (never_started, undo.lua).
local function unnotify(base, id, ev)
  local cfg = notify_subs(base)
  local targets = cfg and cfg.on[ev]
  if type(targets) ~= 'table' then
    return
  end
  local q, d = base .. 'notify:q', base .. 'notify:d'
  for _, t in ipairs(targets) do
    local key = t .. ' ' .. id .. ':' .. ev
    redis.call('ZREM', q, key)
    redis.call('HDEL', d, key, key .. '\no', key .. '\nn')
  end
end

local function notify(base, rec, ended)
  local cfg = notify_subs(base)
  if not cfg then
    return
  end
  local ev = rec.outcome
  if ev == 'succeeded' then
    if (tonumber(ended) or 0) <= 0 then
      return
    end
    ev = 'recovered'
  end
  local targets = cfg.on[ev]
  if type(targets) ~= 'table' then
    return
  end
  local now = now_ms()
  local due = now
  if ev == 'lease_lost' then
    due = now + LEASE_LOST_HOLD
  end
  local q, d = base .. 'notify:q', base .. 'notify:d'
  local max = tonumber(cfg.max) or 1000
  local body = cjson.encode({event = ev, run = rec, queued = int(now)})
  for _, t in ipairs(targets) do
    local key = t .. ' ' .. rec.id .. ':' .. ev
    if redis.call('ZCARD', q) >= max then
      -- Bounded: a receiver down for long must not grow Redis' memory.
      redis.call('HINCRBY', d, '#dropped', 1)
    elseif redis.call('ZADD', q, 'NX', due, key) == 1 then
      redis.call('HSET', d, key, body)
    end
  end
  redis.call('PEXPIRE', q, META_TTL)
  redis.call('PEXPIRE', d, META_TTL)
end

-- notify_entry is notify for a history entry already encoded (complete.lua),
-- for a job whose meta's notify flag is set: it decodes it only then.
local function notify_entry(base, entry, ended)
  local ok, rec = pcall(cjson.decode, entry)
  if ok and type(rec) == 'table' then
    notify(base, rec, ended)
  end
end

-- What the metrics export of each job (sync.lua returns it), kept in its
-- meta by whoever closes or decides a run:
--   ok            server ms the job's last successful run ended
--   fails         the failure streak, kept by tally (not by note)
--   at:<outcome>  server ms of the job's last run with that outcome: when it
--                 ended, or when it was decided (missed, skipped_*)
local OUTCOMES = {'succeeded', 'failed', 'timed_out', 'lease_lost', 'interrupted', 'replaced', 'missed',
  'skipped_overlap', 'skipped_paused', 'skipped_blackout', 'cancelled'}

-- note records in the job's meta that one of its runs got outcome at at
-- (server ms, a string).
local function note(base, outcome, at)
  local meta = base .. 'meta'
  if outcome == 'succeeded' then
    redis.call('HSET', meta, 'at:succeeded', at, 'ok', at)
  elseif outcome and outcome ~= 'running' and outcome ~= 'waiting' then
    redis.call('HSET', meta, 'at:' .. outcome, at)
  end
end

-- unnote_lease_lost takes back a lease_lost that turned out to be a run
-- never started (closed lease_lost at closed_at, missed at at): it does not
-- count in the failure streak (pause_after_failures, the gauge; a pause it
-- caused stands, for an operator to resume), and is no longer the last
-- lease lost.
local function unnote_lease_lost(base, closed_at, at)
  local meta = base .. 'meta'
  local m = redis.call('HMGET', meta, 'fails', 'at:lease_lost')
  if (tonumber(m[1]) or 0) > 0 then
    redis.call('HINCRBY', meta, 'fails', -1)
  end
  if closed_at and m[2] == closed_at then
    redis.call('HDEL', meta, 'at:lease_lost')
  end
  note(base, 'missed', at)
end

-- stats packs what note kept, for sync.lua's answer:
-- "ok|fails|outcome=ms,outcome=ms,..." (only outcomes the job has had).
-- STATS are its fields; pack_stats packs their values, read at v[off + 1]
-- and on.
local STATS = {'ok', 'fails'}
for i, o in ipairs(OUTCOMES) do
  STATS[i + 2] = 'at:' .. o
end

local function pack_stats(v, off)
  local runs = {}
  for i, o in ipairs(OUTCOMES) do
    if v[off + i + 2] then
      runs[#runs + 1] = o .. '=' .. v[off + i + 2]
    end
  end
  return (v[off + 1] or '') .. '|' .. (v[off + 2] or '0') .. '|' .. table.concat(runs, ',')
end

local function stats(meta)
  return pack_stats(redis.call('HMGET', meta, unpack(STATS)), 0)
end

-- push_entry pushes a history entry (JSON; decision and outcome are its
-- own) onto the job's history list. The list's TTL is set when it is
-- created and refreshed once a day with the job's meta (check_epoch), not
-- on every push. The job's kept history is the list's first hl entries
-- (hl: history_limit): the list is trimmed to them in steps, once it holds
-- H_SLACK more (LTRIM), not on every push, and every reader reads only the
-- first h:n entries (status.lua; keptWindow, scheduler/storecontrol.go). It
-- keeps in the meta the outcomes of the kept entries, so that a success
-- ratio over the whole kept history costs one HMGET for any history_limit:
--   h:n   entries kept       h:s   of which started     h:ok  of which succeeded
--   h:f   one character per entry of the whole list, newest first: 'o'
--         started and succeeded, 's' started, '.' decided without starting
-- The new entry counts in, the entry that falls past hl counts out: both
-- read from h:f, so a push decodes nothing. A list whose length is not
-- h:f's (it expired or was lost apart from the meta, an entry was taken
-- out, a store from before h:f) is trimmed and counted afresh, once.
-- push_counted is push_entry for a caller that read the counts already (m:
-- h:n, h:s, h:ok; f: h:f) and writes the meta itself: it returns the fields
-- to set.
local H_SLACK = 8
local function push_counted(base, entry, decision, outcome, hl, m, f)
  hl = math.max(tonumber(hl) or 100, 1)
  local h = base .. 'history'
  local n = redis.call('LPUSH', h, entry)
  if n == 1 then
    redis.call('PEXPIRE', h, META_TTL)
    -- A new list holds this entry alone: nothing to read back.
    f = ''
  end
  local c = '.'
  if decision == 'started' then
    c = outcome == 'succeeded' and 'o' or 's'
  end
  local s, ok
  if f and #f == n - 1 then
    f = c .. f
    if tonumber(m[1]) == math.min(n - 1, hl) and tonumber(m[2]) and tonumber(m[3]) then
      -- The counts are of the same window: the new entry in, the one that
      -- fell past hl out.
      s = tonumber(m[2])
      ok = tonumber(m[3])
      if c ~= '.' then
        s = s + 1
        if c == 'o' then
          ok = ok + 1
        end
      end
      local out = string.sub(f, hl + 1, hl + 1)
      if out == 'o' then
        s, ok = s - 1, ok - 1
      elseif out == 's' then
        s = s - 1
      end
    else
      -- history_limit changed, or the counts were lost: count the window.
      local w = string.sub(f, 1, hl)
      local _, no = string.gsub(w, 'o', '')
      local _, ns = string.gsub(w, 's', '')
      s, ok = no + ns, no
    end
  else
    redis.call('LTRIM', h, 0, hl - 1)
    local items = redis.call('LRANGE', h, 0, -1)
    local cs = {}
    s, ok = 0, 0
    for k, item in ipairs(items) do
      -- Found, not decoded: an entry is a JSON object, and a quote inside a
      -- string value is escaped, so these can only be its own fields.
      cs[k] = '.'
      if string.find(item, '"decision":"started"', 1, true) then
        s = s + 1
        cs[k] = 's'
        if string.find(item, '"outcome":"succeeded"', 1, true) then
          ok = ok + 1
          cs[k] = 'o'
        end
      end
    end
    f = table.concat(cs)
    n = #items
  end
  if n > hl + H_SLACK then
    redis.call('LTRIM', h, 0, hl - 1)
    f = string.sub(f, 1, hl)
  end
  return {'h:n', math.min(n, hl), 'h:s', s, 'h:ok', ok, 'h:f', f}
end

local function push_entry(base, entry, decision, outcome, hl)
  local meta = base .. 'meta'
  local m = redis.call('HMGET', meta, 'h:n', 'h:s', 'h:ok', 'h:f')
  redis.call('HSET', meta, unpack(push_counted(base, entry, decision, outcome, hl, m, m[4])))
end

-- file appends a closed run's record (a table of strings) to the job's
-- history (push_entry).
-- ended: the failure streak a succeeded rec ended (see tally), for notify.
local function file(base, rec, hl, ended)
  if rec.finished then
    note(base, rec.outcome, rec.finished)
  end
  push_entry(base, cjson.encode(rec), rec.decision, rec.outcome, hl)
  notify(base, rec, ended)
end

local function push_history(base, rk, ended)
  local vals = redis.call('HMGET', rk, 'hl', unpack(RECORD))
  local rec = {}
  for i, f in ipairs(RECORD) do
    if vals[i + 1] then rec[f] = vals[i + 1] end
  end
  -- id and job live in the key, not in the record.
  rec.job = job_of(base)
  rec.id = rec.job .. '@' .. string.sub(rk, #base + 5)
  if rec.started and not rec.attempts then
    rec.attempts = '1'
  end
  if rec.started and not rec.slot then
    rec.slot = '1'
  end
  file(base, rec, vals[1], ended)
end

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

-- check_epoch notices lost data. A job's meta carries a random epoch that
-- every replica remembers, and the last fencing token issued, which never
-- falls. Redis forgot things (a restart without persistence, a flush, a
-- failover to a replica that missed writes) when:
--   - the meta is missing: the job's state is created afresh. Whether this
--     is a brand-new job or one whose state was lost cannot always be
--     told apart, so a floor is placed either way (a new job simply starts
--     with its first instant past the floor; see unsure below);
--   - a replica remembers an epoch other than the store's;
--   - a replica has seen a fencing token higher than the last one the store
--     issued (seen; 0 when not checked): the store lost writes since.
-- Any run that started before the loss was claimed at most claim ahead
-- before its instant, on a clock within the max skew of Redis': runs
-- scheduled before now + margin (skew + claim ahead) may have started
-- already, and the floor keeps them from starting again; they are
-- recorded missed. Manual requests made before the loss was noticed
-- (lost: Redis' time then) may have run too. A loss noticed by the fence
-- draws a new epoch, so that every replica learns of it and logs it.
-- born: the store began empty with this process and cannot lose data while
-- it runs (an in-process store, WithEphemeralStore): a missing meta is a
-- new job, and no floor is placed.
-- unsure (kept in the meta): the floor was placed for a missing meta that
-- the asking replica had never seen either — a new job, or a loss nobody
-- remembers (every replica restarted with it). The instants under such a
-- floor are refused without a record (claim.lua): they were never the
-- job's to run, and no miss is reported for them. A replica that remembers
-- the job (another epoch, or a higher fencing token) makes it a sure loss:
-- the rest of the floor is then recorded missed.
-- Returns epoch, floor, paused, last, fence, lost, unsure.
local function check_epoch(meta, known, now, margin, fresh, seen, born)
  -- guarded is read only by a replica that knows another epoch (below):
  -- every won claim reads the rest.
  local m = redis.call('HMGET', meta, 'epoch', 'floor', 'paused', 'last', 'fence', 'day', 'lost', 'unsure')
  local epoch, floor, lost = m[1], tonumber(m[2]) or 0, tonumber(m[7]) or 0
  local fence = tonumber(m[5]) or 0
  -- A number: formatted only on the day it is written (string.format is
  -- dear, and every won claim checks it).
  local day = math.floor(now / 86400000)
  local unsure = m[8] == '1'
  seen = tonumber(seen) or 0
  if not epoch then
    -- The tokens keep rising past what the asking replica saw, and the
    -- others' higher ones (seen before this loss) are not a new loss.
    epoch, floor, lost, fence = fresh, now + margin, now, math.max(fence, seen)
    if born then
      floor, lost = 0, 0
    end
    unsure = known == '' and seen == 0
    redis.call('HSET', meta, 'epoch', epoch, 'floor', int(floor), 'guarded', '1', 'lost', int(lost),
      'fence', int(fence), 'unsure', unsure and '1' or '0')
  elseif known ~= '' and known ~= epoch and redis.call('HGET', meta, 'guarded') ~= '1' then
    floor, lost, unsure = math.max(floor, now + margin), now, false
    redis.call('HSET', meta, 'floor', int(floor), 'guarded', '1', 'lost', int(lost), 'unsure', '0')
  elseif unsure and known ~= '' and known ~= epoch then
    -- A replica that remembers another epoch: the state was lost, not new,
    -- and the rest of the floor is recorded as the loss it is.
    unsure = false
    redis.call('HSET', meta, 'unsure', '0')
  end
  if seen > fence then
    if floor > now then
      -- A loss noticed less than a margin ago: the writes this replica saw
      -- were lost in it (they were made before it), and its floor covers
      -- them. Only the token catches up.
      fence, unsure = seen, false
      redis.call('HSET', meta, 'fence', int(fence), 'unsure', '0')
    else
      epoch, floor, lost, fence, unsure = fresh, now + margin, now, seen, false
      redis.call('HSET', meta, 'epoch', epoch, 'floor', int(floor), 'guarded', '1', 'lost', int(lost),
        'fence', int(fence), 'unsure', '0')
    end
  end
  if tonumber(m[6]) ~= day then
    -- Once a day, not on every call: keep the job's long-lived keys alive
    -- while some replica still has the job in its table.
    local base = base_of(meta)
    redis.call('HSET', meta, 'day', int(day))
    redis.call('PEXPIRE', meta, META_TTL)
    redis.call('PEXPIRE', base .. 'history', META_TTL)
  end
  return epoch, floor, m[3] or '0', tonumber(m[4]) or 0, fence, lost, unsure
end

-- next_fence issues the job's next fencing token (fence.lua's rule): the
-- server's TIME in microseconds, bumped past both the last token issued and
-- the highest token the asking replica has seen. Anchored to time, tokens
-- keep rising after Redis loses the counter. fence_after (fence.lua) is the
-- same for a caller that read the last token and the time already.
local function next_fence(meta, floor)
  local _, us = clock()
  local f = fence_after(us, redis.call('HGET', meta, 'fence'), floor)
  redis.call('HSET', meta, 'fence', int(f))
  return f
end

-- take_slot returns the lowest slot number no run holding a slot has; its
-- caller records it in the run's record (slot). held: how many runs hold a
-- slot of the job now (ZCARD slots, after reaping). The numbers held are
-- 1..top (meta field top) but those given back (nums, by release and
-- reap): the lowest free one is nums' lowest, or top + 1. Its cost does not
-- depend on concurrency, and it holds whatever limits the replicas' tables
-- say: a limit raised (or lowered and raised) while runs hold slots never
-- gives a held number again.
-- A run that finds no slot held takes number 1 and writes nothing: with
-- concurrency 1 (most jobs) numbering costs no command. Then top stays
-- absent, which says "at most one holder, of number 1": the next run to
-- take a slot while that one is held (a limit raised, or a replica with
-- another table) sees top absent and held > 0, and takes 2 (top := 2);
-- the last release clears top and nums (unhold), so an empty job always
-- starts again from an absent top. Only a script that knows no slot is
-- held may skip the write: ZCARD counts expired holders not reaped yet as
-- holders, which is safe (they keep their numbers until reaped).
-- The fencing token rises per job, so per slot too: a sink that keeps the
-- highest token per slot refuses exactly that slot's stale holders.
local function take_slot(base, held)
  if held == 0 then
    return 1
  end
  local low = redis.call('ZPOPMIN', base .. 'nums')
  local n = tonumber(low[1])
  if not n then
    n = redis.call('HINCRBY', base .. 'meta', 'top', 1)
    if n == 1 then
      -- top was absent: the one run holding a slot holds number 1.
      n = 2
      redis.call('HSET', base .. 'meta', 'top', 2)
    end
  end
  return n
end

-- start puts a decided run into a slot (and a slot of pool pk, or nil) and
-- issues its first fencing token (held: as take_slot's). Returns the token
-- and the slot's number.
local function start(meta, base, rk, id, lease, now, ffloor, pk, held)
  local slot = take_slot(base, held)
  local f = next_fence(meta, ffloor)
  hold(base, id, now + lease, false, pk)
  redis.call('HSET', rk, 'decision', 'started', 'outcome', 'running', 'fence', int(f),
    'started', int(now), 'attempts', '1', 'slot', slot)
  if pk then
    redis.call('HSET', rk, 'pool', pk)
  end
  redis.call('PEXPIRE', rk, lease + (tonumber(redis.call('HGET', rk, 'ret')) or 60000))
  return f, slot
end


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
