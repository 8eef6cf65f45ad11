-- rw_common.lua is prepended to the read-write lock scripts. The whole lock
-- lives in one hash, so it is safe on Redis Cluster:
--   w = writer token, wx = writer expiry (server ms), wf = writer fencing token
--   r:<token> = "<expiry ms>:<fencing token>" for each reader
--   wi = writer intent expiry (server ms), wio = the waiting writer's token
-- KEYS[1] lock hash
-- KEYS[2] fence counter

-- scan drops expired holders and returns what is left:
-- readers (count), writer token or false, latest expiry, live writer intent owner or false.
local function scan(now)
  local all = redis.call('HGETALL', KEYS[1])
  local readers, last, writer, wx, wi, wio = 0, now, false, nil, nil, false
  for i = 1, #all, 2 do
    local k, v = all[i], all[i + 1]
    if string.sub(k, 1, 2) == 'r:' then
      local exp = tonumber(string.match(v, '^(%d+)'))
      if exp <= now then
        redis.call('HDEL', KEYS[1], k)
      else
        readers = readers + 1
        if exp > last then last = exp end
      end
    elseif k == 'w' then writer = v
    elseif k == 'wx' then wx = tonumber(v)
    elseif k == 'wi' then wi = tonumber(v)
    elseif k == 'wio' then wio = v
    end
  end
  if writer and wx <= now then
    redis.call('HDEL', KEYS[1], 'w', 'wx', 'wf')
    writer = false
  elseif writer and wx > last then
    last = wx
  end
  if wi and wi <= now then
    redis.call('HDEL', KEYS[1], 'wi', 'wio')
    wio = false
  elseif wi and wi > last then
    last = wi
  end
  return readers, writer, last, wio
end

-- keep makes the key live at least until its latest expiry.
local function keep(now, last)
  local need = last - now
  if need < 1 then need = 1 end
  if redis.call('PTTL', KEYS[1]) < need then
    redis.call('PEXPIRE', KEYS[1], int(need))
  end
end

