-- parts/loss.lua: noticing lost data: the epoch and the floor.
-- A part of the scheduler's scripts: internal/luascript adds it to each
-- script that uses one of its names, after the parts it uses.

-- check_epoch notices lost data. A job's meta carries a random epoch that
-- every replica remembers, and the last fencing token issued, which never
-- falls. Redis forgot things (a restart without persistence, a flush, a
-- failover to a replica that missed writes) when:
--   - the meta is missing: the job's state is created afresh. Whether this
--     is a brand-new job or one whose state was lost cannot always be
--     told apart, so a floor is placed either way (a new job simply starts
--     with its first instant past the floor; see unsure below);
--   - a replica remembers an epoch other than the store's;
--   - a replica has seen a fencing token higher than the last one the store
--     issued (seen; 0 when not checked): the store lost writes since.
-- Any run that started before the loss was claimed at most claim ahead
-- before its instant, on a clock within the max skew of Redis': runs
-- scheduled before now + margin (skew + claim ahead) may have started
-- already, and the floor keeps them from starting again; they are
-- recorded missed. Manual requests made before the loss was noticed
-- (lost: Redis' time then) may have run too. A loss noticed by the fence
-- draws a new epoch, so that every replica learns of it and logs it.
-- born: the store began empty with this process and cannot lose data while
-- it runs (an in-process store, WithEphemeralStore): a missing meta is a
-- new job, and no floor is placed.
-- unsure (kept in the meta): the floor was placed for a missing meta that
-- the asking replica had never seen either — a new job, or a loss nobody
-- remembers (every replica restarted with it). The instants under such a
-- floor are refused without a record (claim.lua): they were never the
-- job's to run, and no miss is reported for them. A replica that remembers
-- the job (another epoch, or a higher fencing token) makes it a sure loss:
-- the rest of the floor is then recorded missed.
-- Returns epoch, floor, paused, last, fence, lost, unsure, and with kept
-- set the kept retention's field as read (parts/kept.lua), read here so
-- that a won claim reads its meta once.
local function check_epoch(meta, known, now, margin, fresh, seen, born, kept)
  -- guarded is read only by a replica that knows another epoch (below):
  -- every won claim reads the rest.
  local m
  if kept then
    m = redis.call('HMGET', meta, 'epoch', 'floor', 'paused', 'last', 'fence', 'day', 'lost', 'unsure', 'kr')
  else
    m = redis.call('HMGET', meta, 'epoch', 'floor', 'paused', 'last', 'fence', 'day', 'lost', 'unsure')
  end
  local epoch, floor, lost = m[1], tonumber(m[2]) or 0, tonumber(m[7]) or 0
  local fence = tonumber(m[5]) or 0
  -- A number: formatted only on the day it is written (string.format is
  -- dear, and every won claim checks it).
  local day = math.floor(now / 86400000)
  local unsure = m[8] == '1'
  seen = tonumber(seen) or 0
  if not epoch then
    -- The tokens keep rising past what the asking replica saw, and the
    -- others' higher ones (seen before this loss) are not a new loss.
    epoch, floor, lost, fence = fresh, now + margin, now, math.max(fence, seen)
    if born then
      floor, lost = 0, 0
    end
    unsure = known == '' and seen == 0
    redis.call('HSET', meta, 'epoch', epoch, 'floor', int(floor), 'guarded', '1', 'lost', int(lost),
      'fence', int(fence), 'unsure', unsure and '1' or '0')
  elseif known ~= '' and known ~= epoch and redis.call('HGET', meta, 'guarded') ~= '1' then
    floor, lost, unsure = math.max(floor, now + margin), now, false
    redis.call('HSET', meta, 'floor', int(floor), 'guarded', '1', 'lost', int(lost), 'unsure', '0')
  elseif unsure and known ~= '' and known ~= epoch then
    -- A replica that remembers another epoch: the state was lost, not new,
    -- and the rest of the floor is recorded as the loss it is.
    unsure = false
    redis.call('HSET', meta, 'unsure', '0')
  end
  if seen > fence then
    if floor > now then
      -- A loss noticed less than a margin ago: the writes this replica saw
      -- were lost in it (they were made before it), and its floor covers
      -- them. Only the token catches up.
      fence, unsure = seen, false
      redis.call('HSET', meta, 'fence', int(fence), 'unsure', '0')
    else
      epoch, floor, lost, fence, unsure = fresh, now + margin, now, seen, false
      redis.call('HSET', meta, 'epoch', epoch, 'floor', int(floor), 'guarded', '1', 'lost', int(lost),
        'fence', int(fence), 'unsure', '0')
    end
  end
  if tonumber(m[6]) ~= day then
    -- Once a day, not on every call: keep the job's long-lived keys alive
    -- while some replica still has the job in its table.
    local base = base_of(meta)
    redis.call('HSET', meta, 'day', int(day))
    redis.call('PEXPIRE', meta, META_TTL)
    redis.call('PEXPIRE', base .. 'history', META_TTL)
  end
  return epoch, floor, m[3] or '0', tonumber(m[4]) or 0, fence, lost, unsure, m[9]
end
