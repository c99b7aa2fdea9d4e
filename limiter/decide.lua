-- decide.lua: one rate decision for one boundary, atomically. The
-- boundary's cooldown and every limit of the boundary (and of the owner's
-- share) are checked in one script run, and tokens are taken from all of
-- them or from none.
--
-- KEYS[1]    the boundary's cooldown: a string holding the end of the pause
--            in microseconds of Redis TIME, expiring with the pause.
-- KEYS[2..]  one hash per group of limits: the boundary's, then the
--            owner's share. Each field is one limit, named by its interval
--            and burst, holding its theoretical arrival time (TAT).
-- ARGV[1]    want: the most tokens to take (the lease size, or 1). At least
--            one must be available for anything to be taken.
-- ARGV[2..]  for each hash in KEYS[2..]: the number of limits, then for each
--            limit its field name, emission interval (us) and burst.
--
-- Reply {granted, wait_us, reason}: granted is the number of tokens taken
-- (0 when refused); wait_us is how long until one token could be taken;
-- reason is 1 when a boundary limit refused, 2 when the owner's share
-- refused, 3 when the boundary is paused by a cooldown.
--
-- GCRA: a limit with emission interval T and burst B allows k more requests
-- now when tat + k*T - B*T <= now, where tat = max(stored TAT, now); taking
-- them moves the TAT to tat + k*T. The condition is "<=", so a request
-- exactly at the window edge is allowed: B requests at once, then one every
-- T, and never more than Rate+B-1 in any window of one Period.

-- Writes after TIME need effects replication, the default since Redis 5;
-- older servers need to be asked for it.
if redis.replicate_commands then redis.replicate_commands() end

-- TIME is {seconds, microseconds}. Their sum in microseconds (about 1.8e15)
-- is far below 2^53, so Lua's doubles hold it exactly, and since intervals
-- are whole microseconds every value below is an exact integer too. Only
-- tostring() would lose digits (it prints 14); redis.call() arguments are
-- converted with full precision.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local pause_end = tonumber(redis.call('GET', KEYS[1]))
if pause_end and pause_end > now then
  return {0, pause_end - now, 3}
end

local want = tonumber(ARGV[1])
local granted = want
local wait, reason = 0, 0
local groups = {}
local a = 2
for g = 2, #KEYS do
  local n = tonumber(ARGV[a])
  local fields, intervals, bursts = {}, {}, {}
  for i = 1, n do
    fields[i] = ARGV[a + 3 * i - 2]
    intervals[i] = tonumber(ARGV[a + 3 * i - 1])
    bursts[i] = tonumber(ARGV[a + 3 * i])
  end
  a = a + 3 * n + 1

  local stored = redis.call('HMGET', KEYS[g], unpack(fields))
  local tats = {}
  for i = 1, n do
    -- A missing field (false) or a TAT in the past means a full bucket.
    local tat = math.max(tonumber(stored[i]) or now, now)
    tats[i] = tat
    local avail = math.floor((now - tat) / intervals[i]) + bursts[i]
    if avail < granted then granted = avail end
    if avail < 1 then
      local w = tat + intervals[i] - bursts[i] * intervals[i] - now
      if w > wait then
        wait = w
        if g == 2 then reason = 1 else reason = 2 end
      end
    end
  end
  groups[g] = {fields, intervals, tats}
end

if granted < 1 then
  return {0, wait, reason}
end

for g = 2, #KEYS do
  local fields, intervals, tats = groups[g][1], groups[g][2], groups[g][3]
  local args, ttl = {}, 0
  for i = 1, #fields do
    local new_tat = tats[i] + granted * intervals[i]
    args[2 * i - 1] = fields[i]
    args[2 * i] = new_tat
    if new_tat - now > ttl then ttl = new_tat - now end
  end
  redis.call('HSET', KEYS[g], unpack(args))
  -- Once every TAT is in the past the hash means the same as no hash, so
  -- it may expire then; the extra millisecond covers rounding to ms.
  redis.call('PEXPIRE', KEYS[g], math.ceil(ttl / 1000) + 1)
end
return {granted, 0, 0}
