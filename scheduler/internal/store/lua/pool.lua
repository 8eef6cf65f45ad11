-- Holds a pool's slots on Redis Cluster, where a job's scripts cannot reach
-- its pool's key (the pool's hash slot is not the job's): the replica takes
-- a run's pool slot here before it claims (or admits) the run, renews it
-- with the run's lease, and frees it when the run ends or was not started
-- (pool.go). Elsewhere the job's scripts hold pool slots themselves.
-- Replicas racing for one run share one hold (member: the run id), counted
-- once; each names itself (its claim's owner token) among the hold's takers,
-- and the slot is freed once the last taker gives it back: a replica whose
-- claim did not start the run never frees the slot of the one whose did.
-- KEYS[1] the pool's key, "<prefix>:{pool:<pool>}:held" (zset member ->
--         lease expiry, server ms; a member is a run id, or a run id and
--         "#a" for a slot taken to admit a queued run); beside it
--         "<prefix>:{pool:<pool>}:takers" (hash member -> the owner tokens
--         of its takers, separated by spaces)
-- ARGV[1] take|renew|release   ARGV[2] member   ARGV[3] owner token
-- ARGV[4] the pool's size in the asking replica's table   ARGV[5] lease ms
-- Returns "ok" (take: held, now or already; renew: renewed; release: given
-- back), "full" (take: every slot is held) or "lost" (renew: the member
-- holds no slot).
-- protocol: head=5 per_run=0 answers=ok,full,lost (checked against protocol.go by TestProtocolHeaders)
local key, op, member, owner = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local tk = string.sub(key, 1, -5) .. 'takers'
local now = now_ms()

local function has(list, o)
  return list and string.find(' ' .. list .. ' ', ' ' .. o .. ' ', 1, true) ~= nil
end

if op == 'release' then
  local list = redis.call('HGET', tk, member)
  local left = {}
  for o in string.gmatch(list or '', '%S+') do
    if o ~= owner then
      left[#left + 1] = o
    end
  end
  if #left == 0 then
    redis.call('HDEL', tk, member)
    redis.call('ZREM', key, member)
  else
    redis.call('HSET', tk, member, table.concat(left, ' '))
  end
  return 'ok'
end
local lease = tonumber(ARGV[5])
if op == 'renew' then
  local exp = tonumber(redis.call('ZSCORE', key, member))
  if not exp or exp <= now then
    redis.call('ZREM', key, member)
    redis.call('HDEL', tk, member)
    return 'lost'
  end
  redis.call('ZADD', key, 'XX', now + lease, member)
  return 'ok'
end
-- take: holds whose lease ran out (a replica died holding one) are freed.
for _, m in ipairs(redis.call('ZRANGEBYSCORE', key, '-inf', now)) do
  redis.call('HDEL', tk, m)
end
expire(key, now)
local list = redis.call('HGET', tk, member)
if redis.call('ZSCORE', key, member) then
  if not has(list, owner) then
    redis.call('HSET', tk, member, (list and list .. ' ' or '') .. owner)
  end
  redis.call('ZADD', key, 'GT', now + lease, member)
  return 'ok'
end
if redis.call('ZCARD', key) >= tonumber(ARGV[4]) then
  return 'full'
end
redis.call('ZADD', key, now + lease, member)
redis.call('HSET', tk, member, owner)
redis.call('PEXPIRE', key, META_TTL)
redis.call('PEXPIRE', tk, META_TTL)
return 'ok'
