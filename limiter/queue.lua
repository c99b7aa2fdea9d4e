-- queue.lua: the fair queue's decisions of several requests for one
-- boundary, in one script run. Requests are decided in the order given;
-- each either gets a slot (a token taken from every limit, due now or up to
-- its deadline later) or is refused and told its place. (Without the queue
-- every request is sent now or never, and decide.lua decides a count.)
--
-- KEYS[1]        the boundary's cooldown (see decide.lua).
-- KEYS[2]        its scope's cooldown, KEYS[1] again without a scope (see
--                decide.lua).
-- KEYS[3..L+2]   one string per limit holding its TAT (see decide.lua).
-- KEYS[L+3]      the owners' slots ahead: a hash, one field per owner that
--                held slots ahead of now when it was last written, holding
--                them (µs of Redis TIME, comma-separated). It is read only
--                for an owner whose latest slot (KEYS[L+4]) is ahead, so an
--                owner whose slots are all reached needs no field, and a
--                field left from before means nothing.
-- KEYS[L+4]      the owners' latest slots: a sorted set, one member per
--                owner, scored by its latest slot, whether reached or not,
--                so that the number of owners holding a slot ahead of any
--                time is one ZCOUNT, owners that stopped asking are found
--                without reading the others, and an owner that is sent now
--                costs one ZADD.
-- ARGV[1]        the clock: 0 means Redis TIME; anything else is "now" in
--                µs, which only tests send, so that queue order can be
--                checked against a fake clock; keys then live a minute
--                longer (see keep).
-- ARGV[2]        L, the number of limits.
-- ARGV[3]        how far ahead of now (µs) an owner alone may hold slots
--                beyond its weight.
-- ARGV[4..]      for each limit: emission interval (µs), burst, reason code
--                (as in decide.lua).
-- then           n, the number of requests, and for each request three
--                values: how long it may wait for a slot (µs; 0 means now
--                or never), its owner's field in the queue, and the number
--                of slots its owner may hold ahead of now (its weight).
--
-- Reply: now, then five integers per request:
--   granted   1 when a slot was taken, else 0
--   wait      granted: µs until the slot (0 when due now); refused: µs
--             until its place in the queue, the earliest it could be sent
--   retry     refused: µs until asking again can change the answer; for
--             an owner holding all its slots, until a round before its
--             turn
--   reason    0 when granted; the refusing limit's code; 3 for a
--             cooldown, 5 for the scope's (as in decide.lua); 4 when the
--             owner already holds all its slots
--   depth     slots its owner holds ahead of now, after this request
-- or {now} alone when every request was granted now and no owner of the
-- batch holds a slot ahead (each as 1, 0, 0, 0, 0), so that the reply of
-- a boundary that is not saturated does not grow with the batch.
--
-- GCRA for n tokens at once: a limit with interval T and burst B has its
-- next token due at max(now, tat + T - B*T), where tat = max(stored TAT,
-- now); taking it for a request sent at slot s moves tat to
-- max(tat, s) + T. A slot is the latest of these over all limits, so
-- granting k requests takes k tokens from every limit and never more than
-- each limit grants. A refused request takes nothing; its place
-- counts the refused requests before it, as if they had queued.
--
-- The fair queue is round-robin by owner: an owner may hold at most its
-- weight of slots ahead of now, so while the boundary is saturated each
-- owner that keeps asking gets its weight of slots per round, whatever
-- number of requests it has waiting. An owner alone (no other owner had a
-- slot within the lookahead) may also hold every slot up to the lookahead,
-- so that the boundary stays busy while its requests come back for their
-- next slot.
--
-- Cost and memory: a run reads and writes the entries of its own
-- requests' owners only and counts the others with two ZCOUNTs. A run that
-- adds an owner, and every run on a saturated boundary, forgets up to n+16
-- owners whose latest slot fell out of the lookahead; since a run adds at
-- most n, the queue grows only while none is stale, so it never holds
-- more owners than the most that ever had a slot within the lookahead at
-- once (bounded by the slots the limits grant within the longest wait),
-- and the keys expire once every latest slot is past the lookahead. Its
-- time is O((n+16) log N) for N owners. A request sent now on a boundary
-- that is not saturated, by an owner the queue knows, costs five commands
-- (TIME, MGET, SET, ZADD, PEXPIRE), two more than decide.lua: the owner's
-- latest slot and the key's life. The fair queue needs Redis 6.2
-- (ZMSCORE).

if redis.replicate_commands then redis.replicate_commands() end

-- Times are whole µs below 2^53, exact in Lua's doubles (see decide.lua);
-- fmt writes one without the digits tostring() would drop.
local function fmt(x) return string.format('%.0f', x) end

local now = tonumber(ARGV[1])
-- keep is added to every key's life (ms). Redis expires keys in its own
-- time while a test's clock stands still between decisions, so with a
-- test's clock a key lives a minute longer than its times need: a slow
-- machine between two decisions must not expire what the clock says is
-- still ahead.
local keep = 60000
if now == 0 then
  keep = 0
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local nlim = tonumber(ARGV[2])
local lookahead = tonumber(ARGV[3])
local at = 4 + 3 * nlim
local n = tonumber(ARGV[at])
local reply = {now}

local vals = redis.call('MGET', unpack(KEYS, 1, nlim + 2))
local pause_end, pause_reason = tonumber(vals[1]) or 0, 3
local scope_end = tonumber(vals[2]) or 0
if scope_end > pause_end then pause_end, pause_reason = scope_end, 5 end
if pause_end > now then
  for j = 1, n do
    for _, v in ipairs({0, pause_end - now, pause_end - now, pause_reason, 0}) do reply[#reply + 1] = v end
  end
  return reply
end

local T, B, R, tat = {}, {}, {}, {}
local tmax = 0
-- Not saturated: when every limit has a token now for all n requests, no
-- owner holds a slot ahead (see below) and each request is sent now with
-- nothing ahead, which is what the loop below would decide one by one
-- (the n-th request's slot is the latest, and it is due).
local idle = true
for i = 1, nlim do
  T[i] = tonumber(ARGV[1 + 3 * i])
  B[i] = tonumber(ARGV[2 + 3 * i])
  R[i] = tonumber(ARGV[3 + 3 * i])
  tat[i] = math.max(tonumber(vals[i + 2]) or now, now)
  if T[i] > tmax then tmax = T[i] end
  if tat[i] + n * T[i] - B[i] * T[i] > now then idle = false end
end

local qkey, zkey = KEYS[nlim + 3], KEYS[nlim + 4]
local horizon = now - lookahead

-- forget drops up to k owners whose latest slot fell out of the lookahead:
-- they count for nothing.
local function forget(k)
  local stale = redis.call('ZRANGEBYSCORE', zkey, '-inf', horizon, 'LIMIT', 0, k)
  if #stale > 0 then
    redis.call('HDEL', qkey, unpack(stale))
    redis.call('ZREM', zkey, unpack(stale))
  end
end

-- save writes the limits' TATs after taking tokens, and the owners'
-- latest slots (zadd: score, owner, ...) and slots ahead (hset: owner,
-- slots, ...), each in one command: a command run from a script costs
-- more than the Lua around it. It returns the number of owners new to the
-- queue. Both queue keys mean nothing once every owner's latest slot is
-- out of the lookahead. The first limit is the boundary's in every batch
-- (an owner's share limits follow the boundary's), and a slot is granted
-- before the TAT of every limit of its batch, so the first limit's TAT
-- bounds every owner's latest slot without reading them. That TAT only
-- moves later while its key lives (once it expires every slot is past),
-- so the keys' expiry never moves back, and the hash, written no later
-- than the sorted set, never outlives it: no field outlives its owner's
-- entry, which forget removes with it. (Another limit's TAT, an owner's
-- share, may run far ahead and would let the hash outlive the set.)
local function save(zadd, hset)
  for i = 1, nlim do
    -- Once the TAT is in the past the key means the same as no key.
    redis.call('SET', KEYS[i + 2], tat[i], 'PX', math.ceil((tat[i] - now) / 1000) + 1 + keep)
  end
  if #zadd == 0 then return 0 end
  local ttl = math.ceil(((tat[1] or now) + lookahead - now) / 1000) + 1 + keep
  local added = redis.call('ZADD', zkey, unpack(zadd))
  redis.call('PEXPIRE', zkey, ttl)
  if #hset > 0 then
    redis.call('HSET', qkey, unpack(hset))
    redis.call('PEXPIRE', qkey, ttl)
  end
  return added
end

-- The batch's owners.
local owners, seen = {}, {}
for j = 1, n do
  local owner = ARGV[at + 3 * j - 1]
  if not seen[owner] then
    seen[owner] = true
    owners[#owners + 1] = owner
  end
end

if idle then
  -- Every request is sent now: each limit gives n tokens, each owner's
  -- latest slot is now. No owner holds a slot ahead: a slot s ahead of now
  -- is granted only when its deciding limit is empty (tat + T - B*T = s),
  -- which leaves that limit's TAT at s + B*T, so while s is ahead the
  -- limit has no n tokens (tat + n*T - B*T >= s + n*T > now). The owners'
  -- entries, the loop and the owner counts are skipped, so such a run
  -- costs O(owners), not O(n), beyond reading its arguments, and it
  -- forgets stale owners only when it adds one: the queue grows only in
  -- runs that forget up to 16 more than they add. (The argument needs the
  -- processes to share the boundary's limits. While a change of Limits
  -- rolls out, the new limits' keys, named by interval and burst, start
  -- full, and an owner may get one slot beyond its weight from them.)
  local zadd = {}
  for k, owner in ipairs(owners) do
    zadd[2 * k - 1] = now
    zadd[2 * k] = owner
  end
  for i = 1, nlim do tat[i] = tat[i] + n * T[i] end
  if save(zadd, {}) > 0 then forget(n + 16) end
  return reply
end

-- Saturated: the queue, for the owners of this batch only: each one's
-- slots still ahead of now (q) and its latest slot already reached if
-- within the lookahead (passed); for every owner, how many hold slots
-- ahead (active, the length of a round) and how many held one within the
-- lookahead (recent: an owner is alone only if no other is).
forget(n + 16)
local latest = redis.call('ZMSCORE', zkey, unpack(owners))
local q, passed, dirty, ahead = {}, {}, {}, {}
for k, owner in ipairs(owners) do
  local s = tonumber(latest[k])
  q[owner] = {}
  if s and s > now then
    ahead[#ahead + 1] = owner
  elseif s and s > horizon then
    passed[owner] = s
  end
end
if #ahead > 0 then
  -- An owner's latest slot says all when it is reached; only owners with
  -- one ahead have their slots read from the hash.
  local vals = redis.call('HMGET', qkey, unpack(ahead))
  for k, owner in ipairs(ahead) do
    local slots = q[owner]
    for s in string.gmatch(vals[k] or '', '%d+') do
      s = tonumber(s)
      if s > now then
        slots[#slots + 1] = s
      elseif s > horizon then
        passed[owner] = math.max(passed[owner] or 0, s)
      end
    end
  end
end

local taken, refused, behind = 0, 0, {}
-- rows[j] is request j's five integers; granted_now is the row of a
-- request sent now whose owner holds no slot ahead, shared because it is
-- the common case on a boundary that is not saturated.
local rows, granted_now, all_now = {}, {1, 0, 0, 0, 0}, true
local active = redis.call('ZCOUNT', zkey, '(' .. fmt(now), '+inf')
local recent = redis.call('ZCOUNT', zkey, '(' .. fmt(horizon), '+inf')
for j = 1, n do
  local a = at + 3 * j - 2
  local maxwait, owner, weight = tonumber(ARGV[a]), ARGV[a + 1], tonumber(ARGV[a + 2])
  -- slot: when every limit has a token for this request; place: the same
  -- behind the requests refused before it.
  local slot, place, reason = now, now, 0
  for i = 1, nlim do
    local s = tat[i] + T[i] - B[i] * T[i]
    if s > slot then slot = s end
    s = s + refused * T[i]
    if s > place then place = s; reason = R[i] end
  end
  local mine = q[owner]
  local r
  local full = #mine >= weight
  local me = (#mine > 0 or passed[owner]) and 1 or 0
  if full and recent == me and slot <= now + math.min(lookahead, maxwait) then
    full = false -- alone: keep the boundary busy
  end
  if full then
    -- The owner holds all its slots: a slot frees when its first is
    -- reached, and its next turn comes a round after its last. The b-th
    -- of its requests refused here comes back b rounds after the first,
    -- when its turn is near, so that an owner with thousands of requests
    -- waiting does not send them all back at once at every slot.
    local b = behind[owner] or 0
    behind[owner] = b + 1
    local round = math.max(active, 1) * tmax
    local p = math.max(slot, mine[#mine] + round) + b * round
    r = {0, p - now, math.max(mine[1], p - round) - now, 4, #mine}
  elseif slot <= now + maxwait then
    -- A limit that is not the one deciding the slot still counts the
    -- request when it is sent, at the slot.
    for i = 1, nlim do tat[i] = math.max(tat[i], slot) + T[i] end
    taken = taken + 1
    if me == 0 then recent = recent + 1 end
    if slot > now then
      if #mine == 0 then active = active + 1 end
      mine[#mine + 1] = slot
    else
      passed[owner] = slot
    end
    dirty[owner] = true
    if slot > now or #mine > 0 then r = {1, slot - now, 0, 0, #mine} else r = granted_now end
  else
    refused = refused + 1
    r = {0, place - now, place - now, reason, #mine}
  end
  rows[j] = r
  if r ~= granted_now then all_now = false end
end

-- Every owner granted a slot has a latest one, reached or ahead.
local hset, zadd = {}, {}
for owner in pairs(dirty) do
  local slots = q[owner]
  zadd[#zadd + 1] = slots[#slots] or passed[owner]
  zadd[#zadd + 1] = owner
  if #slots > 0 then
    local s = {}
    for k, v in ipairs(slots) do s[k] = fmt(v) end
    hset[#hset + 1] = owner
    hset[#hset + 1] = table.concat(s, ',')
  end
end
if taken > 0 then save(zadd, hset) end
-- Every request sent now, none of its owner's slots ahead: the reply is
-- {now} alone, so that it does not grow with the batch.
if all_now then return reply end
for j = 1, n do
  local r = rows[j]
  for k = 1, 5 do reply[#reply + 1] = r[k] end
end
return reply
