-- parts/keys.lua: a job's keys, the server's time, and how long a job's state lives.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

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

local function run_key(base, id)
  return base .. 'run:' .. string.match(id, '@(.*)$')
end
