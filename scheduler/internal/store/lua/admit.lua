-- Polls the runs one replica has queued for a slot (overlap: wait) of one
-- job, all in one call (one poll per job and replica, however many wait):
-- admits each into a slot when its turn has come, gives it up when its wait
-- is over, or keeps its place.
-- KEYS[1] meta key of the job
-- ARGV[1] lease ms   ARGV[2] concurrency   ARGV[3] waiter ttl ms
-- ARGV[4] highest fencing token the replica has seen
-- ARGV[5] paused by the replica's table: 1|0
-- ARGV[6] the size of the job's pool (0: the job has no pool)
-- ARGV[7] the job's pool, or ""
-- then 3 fields per run: run id, owner token, the run's pool slot, as
--         claim.lua's last term: "" this script takes it, 1 held by the
--         replica for this run already (pool.lua), 0 the replica found the
--         pool full
-- The limits (ARGV[2], ARGV[6], ARGV[7]) are those of the asking replica's
-- table now, not of the table the runs were queued under.
-- Returns one array per run, in order:
--         {"started", fencing token, slot} | {"waiting", place} |
--         {"skipped_overlap"} | {"skipped_paused"} |
--         {"missed"} (admitted by an earlier call whose answer was lost, and
--         closed since: it never started) |
--         {"expired"} (the same, for a manual run: its holder hands it back
--         to the pending requests with undo.lua, which takes the close back) |
--         {"lost"} (no longer ours: reaped, or not found, or closed
--         lease_lost and its event due: lease_lost_final)
-- protocol: head=7 per_run=3 answers=started,waiting,skipped_overlap,skipped_paused,missed,expired,lost (checked against protocol.go by TestProtocolHeaders)
local meta = KEYS[1]
local lease, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local wttl, ffloor, lpaused, psize, pool = tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local now = now_ms()
local base = base_of(meta)
-- Always a write, even when this call only repeats an earlier answer: with
-- min_replicas_ack, the WAIT after it then also covers the first call's
-- writes, made on another connection.
redis.call('PEXPIRE', meta, META_TTL)
reap(base, now)
local queue, waiting = base .. 'queue', base .. 'waiting'
-- Read once a call, when a run first needs them: whether the job is paused
-- (nothing here pauses it), and how many runs hold its slots (each run
-- admitted here adds one): a poll of many queued runs reads them once.
local paused, held

local function admit(id, owner, grant)
  local rk = run_key(base, id)
  local rec = redis.call('HMGET', rk, 'owner', 'outcome', 'wait_until', 'fence', 'kind', 'slot', 'closed_by')
  if rec[1] == owner and rec[2] == 'running' then
    return {'started', rec[4], rec[6] or '1'} -- admitted already; this is a retried call
  end
  if rec[1] == owner and rec[2] == 'lease_lost' and rec[7] ~= 'holder' and
      not lease_lost_final(base, redis.call('HGET', rk, 'finished'), now) then
    -- Admitted by an earlier poll whose answer came after the client's
    -- deadline; its lease ran out meanwhile and the cluster closed it. Still
    -- polling, its holder never had the answer: it never ran. Someone asked
    -- for a manual run: it goes back to the pending requests, not missed.
    if rec[5] == 'm' then
      return {'expired'}
    end
    never_started(base, rk, id,
      'never started: its admission was answered after its replica stopped waiting, and its lease ran out before it polled again', now)
    return {'missed'}
  end
  if rec[1] ~= owner or rec[2] ~= 'waiting' then
    return {'lost'}
  end
  -- A paused job starts nothing more, queued runs included; a manual run
  -- still runs: someone asked for it.
  if rec[5] ~= 'm' and paused == nil then
    paused = lpaused == '1' or redis.call('HGET', meta, 'paused') == '1'
  end
  if rec[5] ~= 'm' and paused then
    redis.call('ZREM', queue, id)
    redis.call('ZREM', waiting, id)
    redis.call('HSET', rk, 'decision', 'skipped_paused')
    close(base, rk, 'skipped_paused', 'job paused while the run waited for a slot', now)
    return {'skipped_paused'}
  end
  if now > tonumber(rec[3]) then
    if rec[5] == 'm' then
      redis.call('ZREM', base .. 'mqueue', id)
    end
    redis.call('ZREM', queue, id)
    redis.call('ZREM', waiting, id)
    redis.call('HSET', rk, 'decision', 'skipped_overlap')
    close(base, rk, 'skipped_overlap', 'no concurrency slot freed within max_wait', now)
    return {'skipped_overlap'}
  end
  -- A pooled job's run also needs a free slot of its pool: taken here
  -- (pk), or by the replica already (grant 1; 0: the pool was full).
  local pk
  if pool ~= '' and grant == '' then
    pk = pool_key(base, pool)
  end
  local pfree = pool_free(pk, psize, now)
  if grant == '0' then
    pfree = 0
  end
  if not held then
    held = redis.call('ZCARD', base .. 'slots')
  end
  local free = math.min(limit - held, pfree)
  local rank = redis.call('ZRANK', queue, id)
  if rank and rank < free then
    if rec[5] == 'm' then
      redis.call('ZREM', base .. 'mqueue', id)
    end
    redis.call('ZREM', queue, id)
    redis.call('ZREM', waiting, id)
    local f, slot = start(meta, base, rk, id, lease, now, ffloor, pk, held)
    held = held + 1
    return {'started', int(f), int(slot)}
  end
  redis.call('ZADD', waiting, now + wttl, id)
  return {'waiting', int((rank or 0) - free + 1)}
end

local out = {}
for i = 8, #ARGV, 3 do
  out[#out + 1] = admit(ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
return out
