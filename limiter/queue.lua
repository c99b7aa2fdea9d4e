-- queue.lua: the fair queue's decisions of several requests for one
-- boundary, in one script run. Requests are decided in the order given;
-- each either gets a slot (a token taken from every limit, due now or up to
-- its deadline later) or is refused and told its place. (Without the queue
-- every request is sent now or never, and decide.lua decides a count.)
--
-- KEYS[1]        the boundary's cooldown (see decide.lua).
-- KEYS[2..L+1]   one string per limit holding its TAT (see decide.lua).
-- KEYS[L+2]      the queue: a hash, one field per owner holding the slots
--                (µs of Redis TIME, comma-separated) it has reserved and
--                not yet reached, after the latest it reached within the
--                lookahead.
-- ARGV[1]        the clock: 0 means Redis TIME; anything else is "now" in
--                µs, which only tests send, so that queue order can be
--                checked against a fake clock.
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
--   retry     refused: µs until asking again can change the answer
--   reason    0 when granted; the refusing limit's code; 3 for a
--             cooldown; 4 when the owner already holds all its slots
--   depth     slots its owner holds ahead of now, after this request
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

if redis.replicate_commands then redis.replicate_commands() end

-- Times are whole µs below 2^53, exact in Lua's doubles (see decide.lua);
-- fmt writes one without the digits tostring() would drop.
local function fmt(x) return string.format('%.0f', x) end

local now = tonumber(ARGV[1])
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local nlim = tonumber(ARGV[2])
local lookahead = tonumber(ARGV[3])
local at = 4 + 3 * nlim
local n = tonumber(ARGV[at])
local reply = {now}

local vals = redis.call('MGET', unpack(KEYS, 1, nlim + 1))
local pause_end = tonumber(vals[1])
if pause_end and pause_end > now then
  for j = 1, n do
    for _, v in ipairs({0, pause_end - now, pause_end - now, 3, 0}) do reply[#reply + 1] = v end
  end
  return reply
end

local T, B, R, tat = {}, {}, {}, {}
local tmax = 0
for i = 1, nlim do
  T[i] = tonumber(ARGV[1 + 3 * i])
  B[i] = tonumber(ARGV[2 + 3 * i])
  R[i] = tonumber(ARGV[3 + 3 * i])
  tat[i] = math.max(tonumber(vals[i + 1]) or now, now)
  if T[i] > tmax then tmax = T[i] end
end

-- The queue: every owner's slots still ahead of now (q), its latest slot
-- already reached if within the lookahead (passed), how many owners hold
-- slots ahead (active, the length of a round) and how many held one
-- within the lookahead (recent: an owner is alone only if no other is).
local q, passed, active, recent, dirty = {}, {}, 0, 0, false
local qkey = KEYS[nlim + 2]
do
  local all = redis.call('HGETALL', qkey)
  for k = 1, #all, 2 do
    local owner, slots = all[k], {}
    for s in string.gmatch(all[k + 1], '%d+') do
      s = tonumber(s)
      if s > now then
        slots[#slots + 1] = s
      elseif s > now - lookahead then
        passed[owner] = math.max(passed[owner] or 0, s)
      else
        dirty = true
      end
    end
    q[owner] = slots
    if #slots > 0 then active = active + 1 end
    if #slots > 0 or passed[owner] then recent = recent + 1 end
  end
end

local taken, refused, behind = 0, 0, {}
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
  if not mine then mine = {}; q[owner] = mine end
  local r
  local full = #mine >= weight
  local me = (#mine > 0 or passed[owner]) and 1 or 0
  if full and recent == me and slot <= now + math.min(lookahead, maxwait) then
    full = false -- alone: keep the boundary busy
  end
  if full then
    -- The owner holds all its slots: a slot frees when its first is
    -- reached, and its next turn comes a round after its last.
    local b = behind[owner] or 0
    behind[owner] = b + 1
    local round = math.max(active, 1) * tmax
    local p = math.max(slot, mine[#mine] + round) + b * round
    r = {0, p - now, mine[1] - now, 4, #mine}
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
    dirty = true
    r = {1, slot - now, 0, 0, #mine}
  else
    refused = refused + 1
    r = {0, place - now, place - now, reason, #mine}
  end
  for _, v in ipairs(r) do reply[#reply + 1] = v end
end

if taken > 0 then
  for i = 1, nlim do
    -- Once the TAT is in the past the key means the same as no key.
    redis.call('SET', KEYS[i + 1], fmt(tat[i]), 'PX', math.ceil((tat[i] - now) / 1000) + 1)
  end
end
if dirty then
  redis.call('DEL', qkey)
  local last = 0
  for owner, slots in pairs(q) do
    local s = {}
    if passed[owner] then
      s[1] = fmt(passed[owner])
      last = math.max(last, passed[owner] + lookahead)
    end
    for _, v in ipairs(slots) do s[#s + 1] = fmt(v) end
    if #slots > 0 then last = math.max(last, slots[#slots]) end
    if #s > 0 then redis.call('HSET', qkey, owner, table.concat(s, ',')) end
  end
  if last > 0 then
    redis.call('PEXPIRE', qkey, math.ceil((last - now) / 1000) + 1)
  end
end
return reply
