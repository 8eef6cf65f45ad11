-- parts/stats.lua: what the metrics export of each job, kept in its meta.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

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
