-- The replica's heartbeat for its jobs, run every second for each job it
-- has not otherwise touched: notices lost data (epoch), frees the slots of
-- dead holders, closes stale manual requests as missed, and reports what the
-- replica needs to know.
-- KEYS[i]  meta key of job i
-- ARGV[1] max clock skew ms   ARGV[2] fresh epoch   ARGV[3] manual request ttl ms
-- ARGV[4] claim ahead ms   ARGV[5] 1: the store began empty with this process (check_epoch's born)
-- then 6 fields per job: known epoch, record retention ms, history limit, replica id,
-- highest fencing token the replica has seen ("0": not checked; see check_epoch),
-- mode: f (the whole heartbeat) or s (statistics: only the meta is read, one
-- command, unless it shows a loss to handle: then the whole heartbeat)
-- Returns per job {epoch, paused, last decided instant ms, floor ms, highest
-- fencing token, the job's run statistics (parts/stats.lua), the server
-- time they were read at (µs), then pending manual runs as pairs: run id,
-- request time ms}
-- protocol: head=5 per_run=6 answers= (checked against protocol.go by TestProtocolHeaders)
local skew, fresh, manual_ttl, ahead = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local born = ARGV[5] == '1'
local now, now_us = clock()
local at = int(now_us)
local out = {}
-- read_stats answers a job's heartbeat in mode s from one read of its
-- meta, or nil when check_epoch has work to do (no state, an epoch the
-- replica does not know, a token above the store's): then it is synced whole.
-- STATS_READ: the fields it reads, listed once per call, not per job.
local STATS_READ = {'epoch', 'paused', 'last', 'floor', 'fence'}
for _, v in ipairs(STATS) do
  STATS_READ[#STATS_READ + 1] = v
end
local function read_stats(meta, known, seen)
  local m = redis.call('HMGET', meta, unpack(STATS_READ))
  local fence = tonumber(m[5]) or 0
  if not m[1] or (known ~= '' and known ~= m[1]) or (tonumber(seen) or 0) > fence then
    return nil
  end
  return {m[1], m[2] or '0', int(tonumber(m[3]) or 0), int(tonumber(m[4]) or 0), int(fence), pack_stats(m, 5), at}
end

for i = 1, #KEYS do
  local a = 5 + 6 * (i - 1)
  local known, retention, hlimit, replica = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local meta = KEYS[i]
  if ARGV[a + 6] == 's' then
    out[i] = read_stats(meta, known, ARGV[a + 5])
  end
  if not out[i] then
    local base = base_of(meta)
    local epoch, floor, paused, last, fence = check_epoch(meta, known, now, skew + ahead, fresh, ARGV[a + 5], born)
    local manual = base .. 'manual'
    -- Most jobs have no run in flight, none queued and no manual request
    -- pending: one EXISTS for the three keys instead of a read of each and
    -- of the pending requests (a replica's first heartbeat syncs every
    -- job whole, and 3 replicas x 10,000 jobs made 30,000 such syncs).
    local busy = redis.call('EXISTS', base .. 'slots', base .. 'waiting', manual) > 0
    if busy then
      reap(base, now)
    end
    for _, id in ipairs(busy and redis.call('ZRANGEBYSCORE', manual, '-inf', now - manual_ttl) or {}) do
      local rk = run_key(base, id)
      if not redis.call('HGET', rk, 'outcome') then
        redis.call('HSET', rk, 'id', id, 'job', job_of(base), 'kind', 'm',
          'sched', int(redis.call('ZSCORE', manual, id)), 'replica', replica, 'ret', retention, 'hl', hlimit,
          'decision', 'missed')
        close(base, rk, 'missed', 'no replica picked up the manual run', now)
      end
      redis.call('ZREM', manual, id)
    end
    local res = {epoch, paused, int(last), int(floor), int(fence), stats(meta), at}
    for _, v in ipairs(busy and redis.call('ZRANGE', manual, 0, 9, 'WITHSCORES') or {}) do
      res[#res + 1] = v
    end
    out[i] = res
  end
end
return out
