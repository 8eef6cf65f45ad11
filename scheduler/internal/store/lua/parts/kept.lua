-- parts/kept.lua: how long a job's run records are kept while replicas run different tables.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

-- A run is de-duplicated by its record, kept for a retention each replica
-- computes from its own table (jitter, starting deadline, max wait, the
-- schedule's interval). While two tables are live (a rolling deploy), or
-- right after a reload, a replica may claim a run later than the table
-- that decided it kept its record: jitter raised from 0 to a minute, say.
-- It would find no record and start the run again. So the job's meta
-- keeps the longest retention any table claims with, and every decision
-- keeps its record at least that long; and since records decided before
-- it rose were kept less, a claim that finds no record refuses a run old
-- enough for such a record to be gone (unless it is after the last
-- instant decided: then it never was). One meta field, kr, holds
-- "kr|kru|krs|krp" (ms; one field read with the rest of the meta):
--   kr   every decision made since krs keeps its record at least kr
--   kru  kr holds until then: a claim with a shorter retention lowers it
--        only after (a table with kr claims at least every kr/2: its
--        retention covers two intervals, and its jitter)
--   krs  since when decisions keep their records kr
--   krp  decisions before krs kept theirs at least krp
-- A lower kr changes nothing for records kept longer, so only a rise moves
-- krs. It is written only when kr rises, falls or is renewed (about once
-- per retention), with the decision's own write of the meta, or alone by
-- a claim refused for it (a rise is kept all the same). A holder's close
-- (complete.lua) keeps the record for the retention the claim wrote in it.

-- kept_retention takes the job's kept retention (k: the meta's kr field
-- as check_epoch read it, or false) for a claim that decides a run now
-- with retention ret (ms). Returns the retention the decision keeps its
-- record (ret or more), whether a claim that found no record must refuse
-- the run (scheduled at sched, ms; from: the earliest it may have been
-- decided, server ms; last: the job's last decided instant, which no
-- decision of a scheduled run leaves behind it), and the meta fields to
-- write with the decision (an empty table when nothing changes). It
-- writes nothing: the caller writes the fields with its decision, after
-- its last check.
local function kept_retention(k, ret, sched, from, now, last)
  local kr, kru, krs, krp
  if k then
    kr, kru, krs, krp = string.match(k, '^(%d+)|(%d+)|(%d+)|(%d+)$')
  end
  kr, kru, krs, krp = tonumber(kr), tonumber(kru), tonumber(krs), tonumber(krp)
  local changed = false
  if not (kr and kru and krs and krp) then
    -- A new job, or state written before kr was kept: nothing tells how
    -- long its records were kept but the asking table (krs 0: since
    -- ever, as before kr was kept).
    kr, kru, krs, krp, changed = ret, now + 2 * ret, 0, ret, true
  elseif ret > kr then
    -- A table with a longer retention: records decided so far were kept
    -- kr (those since krs) or krp (before). krp is forgotten once the
    -- runs decided before krs are past any claim's retention (a claim
    -- comes at most its retention after the run's instant, a catch-up's
    -- after it read the gap; ret is more than the 2 skews of claim ahead).
    if krs > 0 and now <= krs + 2 * ret then
      krp = math.min(kr, krp)
    else
      krp = kr
    end
    kr, kru, krs, changed = ret, now + 2 * ret, now, true
  elseif ret == kr then
    if kru < now + ret then
      kru, changed = now + 2 * ret, true
    end
  elseif now > kru then
    -- No table with the longer retention has claimed for two of them:
    -- it is gone. Records decided since krs were kept at least the new kr.
    kr, kru, changed = ret, now + 2 * ret, true
  end
  local set = {}
  if changed then
    set = {'kr', int(kr) .. '|' .. int(kru) .. '|' .. int(krs) .. '|' .. int(krp)}
  end
  -- A run decided since krs keeps its record kr, and a claim with ret <=
  -- kr finds it. One decided before (from < krs) kept it krp from its
  -- decision, and from its instant (keep). One after the job's last
  -- decided instant never was.
  local gone = sched <= last and from < krs and now > math.max(sched, from) + krp
  return kr, gone, set
end
