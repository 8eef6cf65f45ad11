-- parts/notify.lua: the notification queue.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

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
