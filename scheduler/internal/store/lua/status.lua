-- Reads the state of jobs for the admin API and the command line, in one
-- call: read only, bounded by the number of jobs (a page) and the history
-- limit.
-- KEYS   the meta key of each job (on Redis Cluster, one job per call)
-- ARGV[1] how many history records per job
-- Returns, per job: {paused, last, waiting, manual, history, running,
-- paused_why, fails, pool}, where paused, last, paused_why (why the cluster paused
-- the job by itself) and fails (consecutive failures) are the meta fields
-- ('' when unset), waiting and manual
-- the sizes of the queue and of the manual requests, history the latest
-- records (JSON, newest first), and running one {id, {field, value, ...}}
-- per run holding a slot, and pool always empty (a pool's key is not the
-- job's: the store reads it apart, statuses.go).
-- protocol: head=1 per_run=0 answers= (checked against protocol.go by TestProtocolHeaders)
local limit = tonumber(ARGV[1])
local out = {}
for i, meta in ipairs(KEYS) do
  local base = base_of(meta)
  local m = redis.call('HMGET', meta, 'paused', 'last', 'paused_why', 'fails', 'h:n')
  -- The kept history is the list's first h:n entries (push_entry).
  local n = math.min(limit, tonumber(m[5]) or limit)
  local hist = {}
  if n > 0 then
    hist = redis.call('LRANGE', base .. 'history', 0, n - 1)
  end
  local running = {}
  for _, id in ipairs(redis.call('ZRANGE', base .. 'slots', 0, -1)) do
    local h = redis.call('HGETALL', run_key(base, id))
    if #h > 0 then
      running[#running + 1] = {id, h}
    end
  end
  out[i] = {m[1] or '', m[2] or '', redis.call('ZCARD', base .. 'queue'), redis.call('ZCARD', base .. 'manual'),
    hist, running, m[3] or '', m[4] or '', {}}
end
return out
