-- parts/slots.lua: concurrency and pool slots, their numbers, and a run's start.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

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
