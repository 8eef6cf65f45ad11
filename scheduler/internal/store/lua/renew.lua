-- Renews the leases of runs in flight: each run's record and its slot
-- (and the pool slot its record names, if it took one) together. Renewal never re-creates anything: a missing record or slot
-- means the lease is lost.
-- KEYS[i]  meta key of run i's job
-- ARGV: 3 fields per run: run id, owner token, lease ms
-- Returns one string per run: "ok", "lost", "replaced" or "cancelled" (an
-- operator cancelled it, cancel.lua: renewed all the same, so its slot stays
-- held while the job winds down; its holder closes it).
-- protocol: head=0 per_run=3 answers=ok,lost,replaced,cancelled (checked against protocol.go by TestProtocolHeaders)
local now = now_ms()
local out = {}
-- Each run on its own: a run whose renewal fails (its keys hold something
-- else, say) is answered lost, and the others of the batch are renewed as
-- if it were not there.
local function renew_one(i)
  local a = 3 * (i - 1)
  local id, owner, lease = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  local base = base_of(KEYS[i])
  local rk = run_key(base, id)
  local rec = redis.call('HMGET', rk, 'owner', 'outcome', 'ret', 'cancelled_by', 'pool')
  local slots = base .. 'slots'
  if rec[1] ~= owner then
    out[i] = 'lost'
  elseif rec[2] == 'replaced' then
    out[i] = 'replaced'
  elseif rec[2] ~= 'running' then
    out[i] = 'lost'
  else
    local exp = tonumber(redis.call('ZSCORE', slots, id))
    if not exp or exp <= now then
      -- Expired before anyone reaped it: it is lost all the same.
      release(base, id)
      close(base, rk, 'lease_lost', 'lease expired before it was renewed', now)
      out[i] = 'lost'
    else
      hold(base, id, now + lease, true, rec[5])
      redis.call('PEXPIRE', rk, lease + (tonumber(rec[3]) or 60000))
      out[i] = rec[4] and 'cancelled' or 'ok'
    end
  end
end
for i = 1, #KEYS do
  if not pcall(renew_one, i) then
    out[i] = 'lost'
  end
end
return out
