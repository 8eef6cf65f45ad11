-- parts/history.lua: the run record's fields and the job's history list.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

local RECORD = {'id', 'job', 'kind', 'sched', 'decision', 'outcome', 'replica', 'fence',
  'started', 'finished', 'attempts', 'error', 'output', 'paused', 'slot', 'cancelled_by'}

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
