-- sync: renew one replica's lease and settle its share of each pool, in one
-- atomic step. Every expiry is decided by Redis time (TIME), never by the
-- clocks of the replicas.
--
-- KEYS[1]   members: sorted set, member -> lease expiry (ms, Redis time)
-- KEYS[2]   born: when the fleet state was created (ms, Redis time)
-- KEYS[3]   seq: the sequence number of the member's last sync run
-- KEYS[4]   server: the replication ID of the server that last ran a sync
-- KEYS[5..] pools: one hash per pool, s:<member> share, w:<member> want
-- ARGV[1] member, ARGV[2] lease TTL in ms, ARGV[3] join | renew | leave
-- ARGV[4] the sync's sequence number, above every earlier one of the member
-- ARGV[5..] three per pool: fleet limit, want, keep
--
-- Every live member implicitly holds 1 of every pool (groupconc's smallest
-- limit); only shares above 1 and wants above 1 are stored. A pool's used
-- capacity is the sum of the live members' shares; a share only grows from
-- capacity that is free.
--
-- Returns the error READONLY the server is a replica (role <role>) on a
-- server that is not a primary, {'wrongtype', i, type, want} if KEYS[i]
-- holds another type, {'stale'} for a sync older than one already run
-- (see seq below), {'lost'} when a renewing member's lease is gone, else
-- {'ok', grace_ms, share, target, used, members, ...} with four numbers per
-- pool: the member's share after this call, the share it should shrink to
-- (or may grow to; never above the limit), the pool's used capacity, and
-- the live member count.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me, ttl, mode, seq = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local members, born, seqKey, server = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local firstPool = 5

-- A replica's writes never reach its primary, where the rest of the fleet
-- syncs. A read-only one refuses them; a writable one would count this
-- member alone. So the sync runs on a primary only. A server that hides
-- INFO from scripts is taken as a primary. The error is a READONLY one, as
-- Redis's own to a write here: a client drops the connection and dials
-- again, which reaches the new primary if a failover moved the address.
local info = redis.pcall('INFO', 'replication')
if type(info) ~= 'string' then
  info = ''
end
local role = string.match(info, 'role:(%a+)')
if role and role ~= 'master' then
  return redis.error_reply('READONLY the server is a replica (role ' .. role .. ')')
end
local replid = string.match(info, 'master_replid:(%x+)')

-- extend makes key live ttl from now at least. It never shortens what a
-- replica with a longer lease set: every replica of a fleet has one TTL,
-- but while a change of it rolls out (or two fleets share a prefix), a
-- shorter one would end the others' leases and shares early.
local function extend(key)
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIRE', key, ttl)
  end
end

-- A key of another type (another program's, or planted) fails the sync
-- before anything is written. The reply names the key by its index: the
-- replica quotes it, as a group key may hold any bytes.
local function check(i, want)
  local got = redis.call('TYPE', KEYS[i])['ok']
  if got ~= 'none' and got ~= want then
    return {'wrongtype', i, got, want}
  end
end
local bad = check(1, 'zset') or check(2, 'string') or check(3, 'string') or check(4, 'string')
for i = firstPool, #KEYS do
  bad = bad or check(i, 'hash')
end
if bad then
  return bad
end

-- A sync may reach Redis late: a client gave up on it, and TCP delivered
-- it after a later one of the same member. Its keep may be below what the
-- member runs now, so it changes nothing. A retried copy is refused too.
local last = tonumber(redis.call('GET', seqKey) or '0')
if seq <= last then
  return {'stale'}
end

-- No members key at all means every lease is gone at once: a first start,
-- or Redis lost the key (alone, as an evicting maxmemory policy may lose
-- it, or with the rest). The fleet state is new from now (see born).
if redis.call('EXISTS', members) == 0 then
  redis.call('SET', born, now, 'PX', ttl)
end
-- A new replication ID means another server: a replica promoted by a
-- failover, or a restart from a snapshot. Either may have missed the last
-- writes, so the others' shares here may be below what they run. The
-- fleet state is new (see born): nobody grows for a TTL, while every live
-- member renews and declares what it runs.
if replid then
  local was = redis.call('GET', server)
  if was ~= replid then
    if was then
      redis.call('SET', born, now, 'PX', ttl)
    end
    redis.call('SET', server, replid, 'PX', ttl)
  end
end
redis.call('ZREMRANGEBYSCORE', members, '-inf', now)
local live = redis.call('ZSCORE', members, me)
if mode == 'renew' and not live then
  return {'lost'}
end
if mode ~= 'leave' or live then
  -- It lives as long as the lease at least, so a late copy finds it.
  redis.call('SET', seqKey, seq, 'PX', ttl)
end

local leaving = false
if mode == 'leave' then
  if not live then
    return {'lost'}
  end
  -- A member running nothing leaves at once; one still running tasks keeps
  -- its lease (not renewed) so that they stay counted until it expires.
  leaving = true
  for i = firstPool, #KEYS do
    if tonumber(ARGV[5 + (i - firstPool) * 3 + 2]) > 0 then
      leaving = false
    end
  end
else
  redis.call('ZADD', members, now + ttl, me)
end

-- A fleet state created now (first start, or Redis lost its data) has a
-- grace period of one TTL in which nobody grows: replicas still running on
-- a lost lease, or in fallback, rejoin and declare what they run first.
local b = redis.call('GET', born)
if not b then
  b = now
  redis.call('SET', born, now, 'PX', ttl)
end
local grace = tonumber(b) + ttl - now
if grace < 0 then
  grace = 0
end
if mode ~= 'leave' then
  extend(members)
  extend(born)
  extend(server)
end

local alive = {}
local function isLive(id)
  local v = alive[id]
  if v == nil then
    v = redis.call('ZSCORE', members, id) ~= false
    alive[id] = v
  end
  return v
end

-- fair returns me's max-min fair share of limit among the explicit members
-- (id -> want) after the implicit members have their 1 each.
local function fair(limit, implicit, wants)
  local list = {}
  for id, w in pairs(wants) do
    list[#list + 1] = {id, w}
  end
  table.sort(list, function(x, y)
    if x[2] ~= y[2] then
      return x[2] < y[2]
    end
    return x[1] < y[1]
  end)
  local rem, k = limit - implicit, #list
  for i, e in ipairs(list) do
    local q = math.floor(rem / k)
    if e[2] > q then
      -- Everyone from i on wants more than an equal split: split it, the
      -- remainder one each to the first in line.
      for j = i, #list do
        if list[j][1] == me then
          local f = q
          if j - i < rem - q * k then
            f = q + 1
          end
          return f
        end
      end
    end
    if e[1] == me then
      return e[2]
    end
    rem, k = rem - e[2], k - 1
  end
  return 1
end

local function settle(key, limit, want, keep)
  local h = redis.call('HGETALL', key)
  local shares, wants = {}, {}
  for i = 1, #h, 2 do
    local f = h[i]
    local id = string.sub(f, 3)
    if isLive(id) and id ~= me then
      if string.sub(f, 1, 1) == 's' then
        shares[id] = tonumber(h[i + 1])
      else
        wants[id] = tonumber(h[i + 1])
      end
    elseif id ~= me or mode == 'join' then
      redis.call('HDEL', key, f)
    end
  end
  -- A member declares what it may run: its limit, or what it runs if more
  -- (a joining member's tasks may run beyond the limit). A renewing member
  -- raised its limit only to its share here, so it keeps at most that. It
  -- keeps more only if Redis lost writes: a failover that missed them, or
  -- a lost key. Then its declaration counts, so nobody grows into it.
  local mine = math.max(keep, 1)
  for id in pairs(wants) do
    shares[id] = shares[id] or 1
  end
  for id in pairs(shares) do
    wants[id] = wants[id] or 1
  end
  shares[me], wants[me] = mine, math.max(want, 1)

  local n = redis.call('ZCARD', members)
  local explicit, used, sumw, short = 0, 0, 0, false
  for id, s in pairs(shares) do
    explicit = explicit + 1
    used = used + s
    sumw = sumw + wants[id]
    if wants[id] > s then
      short = true
    end
  end
  local implicit = math.max(n - explicit, 0)
  used, sumw = used + implicit, sumw + implicit

  -- A member with nothing to run keeps its share until another is short
  -- (or it gives it back itself, by keeping less).
  local target = mine
  if leaving or (want == 0 and short) then
    target = 1
  elseif want == 0 then
    target = mine
  elseif sumw > limit then
    target = fair(limit, implicit, wants)
  elseif short then
    target = want
  end
  -- Never above the limit: a share declared above it covers tasks that
  -- already run, and shrinks to the limit as they end (keep drops).
  target = math.min(math.max(target, 1), limit)
  if target > mine and grace == 0 and mode ~= 'leave' then
    local add = math.min(target - mine, limit - used)
    if add > 0 then
      mine, used = mine + add, used + add
    end
  end

  if leaving or (mine <= 1 and want <= 1) then
    redis.call('HDEL', key, 's:' .. me, 'w:' .. me)
  else
    redis.call('HSET', key, 's:' .. me, mine, 'w:' .. me, math.max(want, 1))
    extend(key)
  end
  return {mine, target, used, n}
end

local out = {'ok', grace}
for i = firstPool, #KEYS do
  local a = 5 + (i - firstPool) * 3
  local r = settle(KEYS[i], tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]))
  for _, v in ipairs(r) do
    out[#out + 1] = v
  end
end
if leaving then
  redis.call('ZREM', members, me)
end
return out
