-- Takes back claims and admissions that must not stand, before anyone ran
-- anything on them: a claim too few replicas acknowledged (min_replicas_ack),
-- or, with Redlock, one that won on fewer masters than a quorum.
-- Only a run whose record still carries the caller's owner token and is
-- running or waiting is touched; a final decision (skipped, missed) stays,
-- with one exception: drop takes back a manual run the cluster closed
-- lease_lost whose admission never reached its holder (admit.lua answered
-- expired): its close (history entry, failure streak, lease_lost event)
-- is undone and the request goes back to the pending ones.
--   drop     the run becomes undecided again, as if never claimed: its slot
--            or queue place is freed and its record deleted (a manual run's
--            request goes back to the manual set). Any replica may claim it
--            afresh; the one that dropped it retries until its starting
--            deadline, then records it missed.
--            A backfill's run goes back to its backfill's instants to
--            take (the cursor passed it): it is not counted as started.
--   requeue  a run admitted into a slot goes back to waiting, at its old
--            place in the queue (its ticket), with a fresh waiter expiry.
-- KEYS[i]  meta key of run i's job
-- ARGV: 5 fields per run: run id, owner token, drop|requeue, waiter ttl ms,
--   max wait ms (requeue: how long a run that never waited may wait)
-- Returns one string per run: "dropped", "requeued" or "kept".
-- protocol: head=0 per_run=5 answers=dropped,requeued,kept (checked against protocol.go by TestProtocolHeaders)
local now = now_ms()
local out = {}

-- unclose_manual takes back the cluster's lease_lost close of manual run
-- id (record rk), which never started, and gives the request back to the
-- pending ones with its request time (sched): as if never claimed.
local function unclose_manual(base, rk, id, sched, closed_at)
  local meta, h = base .. 'meta', base .. 'history'
  local m = redis.call('HMGET', meta, 'fails', 'at:lease_lost', 'h:n')
  if (tonumber(m[1]) or 0) > 0 then
    redis.call('HINCRBY', meta, 'fails', -1)
  end
  if closed_at and m[2] == closed_at then
    redis.call('HDEL', meta, 'at:lease_lost')
  end
  for k, item in ipairs(redis.call('LRANGE', h, 0, 99)) do
    local ok, e = pcall(cjson.decode, item)
    if ok and type(e) == 'table' and e.id == id then
      redis.call('LREM', h, 1, item)
      -- push_entry's counts: one entry, started, not succeeded, fewer,
      -- when it was one of the kept ones (the list holds a few more until
      -- it is trimmed). The list is no longer h:f's length: the next push
      -- counts it afresh.
      if k <= (tonumber(m[3]) or 0) then
        redis.call('HINCRBY', meta, 'h:n', -1)
        redis.call('HINCRBY', meta, 'h:s', -1)
      end
      break
    end
  end
  unnotify(base, id, 'lease_lost')
  redis.call('DEL', rk)
  redis.call('ZADD', base .. 'manual', sched, id)
  redis.call('PEXPIRE', base .. 'manual', META_TTL)
end

-- bf_untake takes a backfill's dropped run back out of its counts, and
-- gives its instant (sched, ms) to the backfill to take again.
local function bf_untake(base, id, sched)
  if redis.call('SREM', base .. 'bfruns', id) == 0 then
    return
  end
  local bk = base .. 'backfill'
  redis.call('HINCRBY', bk, 'started', -1)
  redis.call('HINCRBY', bk, 'decided', -1)
  redis.call('ZADD', base .. 'bfredo', sched, sched)
  redis.call('PEXPIRE', base .. 'bfredo', META_TTL)
end

-- Each run on its own: a run whose undo fails (its keys hold something
-- else, say) is answered kept, and the others of the batch are taken back
-- as if it were not there.
local function undo_one(i)
  local a = 5 * (i - 1)
  local id, owner, mode = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local wttl, max_wait = tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local meta = KEYS[i]
  local base = base_of(meta)
  local rk = run_key(base, id)
  local rec = redis.call('HMGET', rk, 'owner', 'outcome', 'kind', 'sched', 'ticket', 'wait_until', 'ret', 'closed_by',
    'finished')
  local queue, waiting = base .. 'queue', base .. 'waiting'
  if rec[1] == owner and mode == 'drop' and rec[3] == 'm' and rec[2] == 'lease_lost' and rec[8] ~= 'holder' and
      not lease_lost_final(base, rec[9], now) then
    unclose_manual(base, rk, id, rec[4], rec[9])
    out[i] = 'dropped'
  elseif rec[1] ~= owner or (rec[2] ~= 'running' and rec[2] ~= 'waiting') then
    out[i] = 'kept'
  elseif mode == 'requeue' then
    if rec[2] == 'running' then
      release(base, id)
      local ticket = rec[5] or redis.call('HINCRBY', meta, 'ticket', 1)
      local until_ = tonumber(rec[6]) or (now + max_wait)
      redis.call('HSET', rk, 'outcome', 'waiting', 'decision', '', 'ticket', ticket, 'wait_until', int(until_))
      redis.call('HDEL', rk, 'started', 'fence', 'attempts')
      redis.call('PEXPIRE', rk, (tonumber(rec[7]) or 60000) + math.max(0, until_ - now))
      redis.call('ZADD', queue, ticket, id)
      if rec[3] == 'm' then
        redis.call('ZADD', base .. 'mqueue', int(until_), id)
      end
    end
    redis.call('ZADD', waiting, now + wttl, id)
    out[i] = 'requeued'
  else
    release(base, id)
    redis.call('ZREM', queue, id)
    redis.call('ZREM', waiting, id)
    redis.call('DEL', rk)
    if rec[3] == 'b' and rec[4] then
      bf_untake(base, id, rec[4])
    end
    if rec[3] == 'm' then
      redis.call('ZREM', base .. 'mqueue', id)
      redis.call('ZADD', base .. 'manual', rec[4], id)
      redis.call('PEXPIRE', base .. 'manual', META_TTL)
    end
    out[i] = 'dropped'
  end
end
for i = 1, #KEYS do
  if not pcall(undo_one, i) then
    out[i] = 'kept'
  end
end
return out
