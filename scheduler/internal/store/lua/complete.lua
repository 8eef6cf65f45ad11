-- Closes runs by their holder: frees the run's slot (or queue place), writes
-- the outcome and files the record in the history. A run the cluster already
-- closed (its lease expired, or it was replaced) keeps that outcome; the
-- holder only adds what it knows. Many runs may be closed in one call.
--
-- KEYS[i]  meta key of run i's job
-- then 8 fields per run, starting at ARGV[8*(i-1) + 1]:
--   1 run id   2 owner token   3 outcome   4 attempts   5 error
--   6 the history entry as the holder knows it: a JSON object of strings
--     without its closing brace; the server adds decision, fence, started
--     and finished, which it holds
--   7 record retention ms   8 history limit
-- Returns one string per run: "ok|<server time, µs>|<the job's run
-- statistics after the close (parts/stats.lua)>", "closed" (already
-- closed by the cluster) or "lost" (not ours). The statistics spare every
-- replica a read of them (the holder publishes them, scheduler/jobmetrics.go).
-- protocol: head=0 per_run=8 answers=ok,closed,lost (checked against protocol.go by TestProtocolHeaders)
local now, now_us = clock()
local fin, fin_us = int(now), int(now_us)
-- What a close reads of the job's meta (the parts' note, tally and
-- push_entry; top for the slot number, take_slot; h:f), in one read: the
-- counts, the notification flag, the statistics (STATS, the failure streak
-- among them) at m[5..], top and h:f. Each field read is a Lua string (or
-- false) made, so none twice and none a common close does not use: the
-- pause flag is read only by a close that reaches pause_after_failures.
local META = {'h:n', 'h:s', 'h:ok', 'notify'}
local ST = #META
local FAILS = ST + 2
for _, f in ipairs(STATS) do
  META[#META + 1] = f
end
META[#META + 1] = 'top'
local TOP = #META
META[#META + 1] = 'h:f'
-- AT[outcome]: where its statistic (at:<outcome>) is in STATS, which is
-- ok, fails, then at:<outcome> in OUTCOMES' order (parts/stats.lua): a
-- close looks its outcome up instead of walking STATS.
local AT = {}
for i, o in ipairs(OUTCOMES) do
  AT[o] = i + 2
end
local out = {}
-- Each run on its own: a run whose close fails (its keys hold something
-- else, say) is answered lost (its holder gives up on it), and the others
-- of the batch are closed as if it were not there.
local function close_one(i)
  local a = 8 * (i - 1)
  local id, owner, outcome = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local base = string.sub(KEYS[i], 1, -5)
  local rk = run_key(base, id)
  -- The error it had is read only when the cluster closed it (below).
  local rec = redis.call('HMGET', rk, 'owner', 'outcome', 'closed_by', 'decision', 'fence', 'started', 'sched', 'pf',
    'cancelled_by', 'slot', 'pool', 'ret')
  if rec[1] ~= owner then
    out[i] = 'lost'
  elseif rec[3] == 'holder' then
    out[i] = 'ok' -- closed by this very call before; a retry after a lost reply
  elseif rec[2] == 'running' or rec[2] == 'waiting' then
    local decision = rec[4] or ''
    -- What the close changes in the job's meta (the parts' note, tally
    -- and push_entry), read and written once each; the read also tells
    -- release about the slot numbers.
    local meta = base .. 'meta'
    local m = redis.call('HMGET', meta, unpack(META))
    if rec[2] == 'waiting' then
      decision = outcome
      redis.call('ZREM', base .. 'queue', id)
      redis.call('ZREM', base .. 'waiting', id)
    else
      release(base, id, {rec[10], rec[11], m[TOP]})
    end
    redis.call('HSET', rk, 'decision', decision, 'outcome', outcome, 'finished', fin, 'error', ARGV[a + 5],
      'attempts', ARGV[a + 4], 'closed_by', 'holder')
    -- Kept for its retention, never deleted: a replica whose clock lags must
    -- still find the run decided. The claim kept the longest retention any
    -- live table claims with in the record (parts/kept.lua), and the
    -- holder's table may have changed since: the longer one.
    keep(rk, math.max(tonumber(ARGV[a + 7]) or 0, tonumber(rec[12]) or 0), rec[7], now)
    local set = {'at:' .. outcome, fin}
    -- m[ST + 1..]: the statistics as this close leaves them (STATS order).
    if AT[outcome] then
      m[ST + AT[outcome]] = fin
    end
    if outcome == 'succeeded' then
      set[3], set[4] = 'ok', fin
      m[ST + 1] = fin
    end
    local paused, ended = '', 0
    if decision == 'started' then
      local fails = tonumber(m[FAILS]) or 0
      if outcome == 'succeeded' and fails > 0 then
        ended = fails
        set[#set + 1], set[#set + 2] = 'fails', 0
        m[FAILS] = '0'
      elseif BAD_END[outcome] then
        -- tally, with the streak read above
        fails = fails + 1
        set[#set + 1], set[#set + 2] = 'fails', fails
        m[FAILS] = int(fails)
        local limit = tonumber(rec[8]) or 0
        if limit > 0 and fails >= limit and redis.call('HGET', meta, 'paused') ~= '1' then
          local why = string.format('paused after %d runs in a row ended badly (pause_after_failures: %d), the last %s',
            fails, limit, outcome)
          redis.call('HSET', meta, 'paused', '1', 'paused_why', why)
          redis.call('HSET', rk, 'paused', why)
          paused = ',"paused":' .. cjson.encode(why)
          local job = job_of(base)
          local ms, us = clock()
          notify(base, {id = job .. '@paused-' .. int(us), job = job, outcome = 'paused', finished = int(ms), paused = why})
        end
      end
    end
    if rec[9] then -- an operator asked it to stop (cancel.lua)
      paused = paused .. ',"cancelled_by":' .. cjson.encode(rec[9])
    end
    local entry = ARGV[a + 6] .. ',"decision":"' .. decision .. '","fence":"' .. (rec[5] or '') ..
      '","started":"' .. (rec[6] or '') .. '","finished":"' .. fin .. '"' .. paused .. '}'
    for _, v in ipairs(push_counted(base, entry, decision, outcome, ARGV[a + 8], m, m[#META])) do
      set[#set + 1] = v
    end
    redis.call('HSET', meta, unpack(set))
    if m[4] == '1' then
      notify_entry(base, entry, ended)
    end
    out[i] = 'ok|' .. fin_us .. '|' .. pack_stats(m, ST)
  else
    local err = redis.call('HGET', rk, 'error') or ''
    if ARGV[a + 5] ~= '' then
      -- Bounded, as the holder bounds its own text: 2 KiB.
      err = string.sub(err .. '; the job then ended: ' .. ARGV[a + 5], 1, 2048)
    end
    release(base, id)
    redis.call('HSET', rk, 'attempts', ARGV[a + 4], 'error', err, 'closed_by', 'holder')
    if outcome == 'missed' and rec[2] == 'lease_lost' and
        not lease_lost_final(base, redis.call('HGET', rk, 'finished'), now) then
      -- The cluster closed it lease_lost, but its holder never started it
      -- (the claim's answer came after its lease): the record, and its
      -- history entry (a recent one), say it never ran.
      never_started(base, rk, id, err, fin)
    end
    out[i] = 'closed'
  end
end
for i = 1, #KEYS do
  if not pcall(close_one, i) then
    out[i] = 'lost'
  end
end
return out
