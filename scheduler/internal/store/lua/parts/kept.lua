-- parts/kept.lua: how long a job's run records are kept while replicas run different tables.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

-- A run is de-duplicated by its record, kept for a retention each replica
-- computes from its own table (jitter, starting deadline, max wait, the
-- schedule's interval). While two tables are live (a rolling deploy), or
-- right after a reload, a replica may claim a run later than the table
-- that decided it kept its record: jitter raised from 0 to a minute, say.
-- It would find no record and start the run again. So the job's meta
-- keeps the longest retention any table claims with (kr), and every
-- decision keeps its record at least that long; and since records decided
-- before kr rose were kept less, a claim that finds no record refuses a
-- run old enough for such a record to be gone (unless it is after the
-- last instant decided: then it never was). Meta fields (server ms):
--   kr   every decision made since krs keeps its record at least kr
--   kru  kr holds until then: a claim with a shorter retention lowers it
--        only after (a table with kr claims at least every kr/2: its
--        retention covers two intervals, and its jitter)
--   krs  since when decisions keep their records kr
--   krp  decisions before krs kept theirs at least krp
-- A lower kr changes nothing for records kept longer, so only a rise moves
-- krs. The cost is one HMGET per decision and a write only when kr rises,
-- falls or is renewed (about once per retention).

-- kept_retention reads the job's kept retention for a claim that decides
-- a run now with retention ret (ms). Returns the retention the decision
-- keeps its record (ret or more), whether a claim that found no record
-- must refuse the run (scheduled at sched, ms; margin: how long before its
-- instant it may have been decided; last: the job's last decided
-- instant, which no decision of a scheduled run leaves behind it), and the
-- meta fields to write with
-- the decision (an empty table when nothing changes). It writes nothing:
-- the caller writes the fields with its decision, after its last check.
local function kept_retention(meta, ret, sched, now, margin, last)
  local k = redis.call('HMGET', meta, 'kr', 'kru', 'krs', 'krp')
  local kr, kru, krs, krp = tonumber(k[1]), tonumber(k[2]) or 0, tonumber(k[3]) or 0, tonumber(k[4])
  local set = {}
  if not kr then
    -- A new job, or state written before kr was kept: nothing tells how
    -- long its records were kept but the asking table.
    kr, krs, krp = ret, now, ret
    set = {'kr', int(kr), 'kru', int(now + 2 * ret), 'krs', int(krs), 'krp', int(krp)}
  elseif ret > kr then
    -- A table with a longer retention: records decided so far were kept
    -- kr (those since krs) or krp (before). krp is forgotten once the
    -- instants decided before krs are past any claim's retention.
    if now <= krs + margin + ret then
      krp = math.min(kr, krp or kr)
    else
      krp = kr
    end
    kr, krs = ret, now
    set = {'kr', int(kr), 'kru', int(now + 2 * ret), 'krs', int(krs), 'krp', int(krp)}
  elseif ret == kr then
    if kru < now + ret then
      set = {'kru', int(now + 2 * ret)}
    end
  elseif now > kru then
    -- No table with the longer retention has claimed for two of them:
    -- it is gone. Records decided since krs were kept at least the new kr.
    kr = ret
    set = {'kr', int(kr), 'kru', int(now + 2 * ret)}
  end
  -- A run decided before krs was kept krp; decided since, kr: a claim
  -- with ret <= kr would find its record. A run scheduled before
  -- krs + margin may have been decided before krs; one after the job's
  -- last decided instant (last, ms) never was.
  local gone = sched <= last and sched < krs + margin and now > sched + (krp or kr)
  return kr, gone, set
end
