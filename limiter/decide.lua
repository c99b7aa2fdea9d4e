-- decide.lua: one rate decision for one boundary, atomically. The
-- boundary's cooldown and every limit of the boundary (and of the owner's
-- share) are checked in one script run, and tokens are taken from all of
-- them or from none.
--
-- KEYS[1]    the boundary's cooldown: a string holding the end of the pause
--            in microseconds of Redis TIME, expiring with the pause.
-- KEYS[2..]  one string per limit (the boundary's, then the owner's share),
--            holding the limit's theoretical arrival time (TAT) in
--            microseconds of Redis TIME.
-- ARGV[1]    want: the most tokens to take (the lease size, or 1). At least
--            one must be available for anything to be taken.
-- ARGV[2..]  for each limit key, three values: its emission interval (us),
--            its burst, and the reason to report when it refuses (1 for a
--            boundary limit, 2 for an owner's share).
--
-- Reply {granted, wait_us, reason}: granted is the number of tokens taken
-- (0 when refused); wait_us is how long until one token could be taken;
-- reason is the refusing limit's code, or 3 when the boundary is paused by
-- a cooldown.
--
-- GCRA: a limit with emission interval T and burst B allows k more requests
-- now when tat + k*T - B*T <= now, where tat = max(stored TAT, now); taking
-- them moves the TAT to tat + k*T. The condition is "<=", so a request
-- exactly at the window edge is allowed: B requests at once, then one every
-- T, and never more than Rate+B-1 in any window of one Period.
--
-- Three commands for one limit (TIME, MGET, SET), so that the server,
-- which runs scripts one at a time, spends as little as possible on each
-- decision.

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

local vals = redis.call('MGET', unpack(KEYS))
local pause_end = tonumber(vals[1])
if pause_end and pause_end > now then
  return {0, pause_end - now, 3}
end

local want = tonumber(ARGV[1])
local granted = want
local wait, reason = 0, 0
local tats = {}
for i = 2, #KEYS do
  local interval = tonumber(ARGV[3 * i - 4])
  local burst = tonumber(ARGV[3 * i - 3])
  -- A missing key (false) or a TAT in the past means a full bucket.
  local tat = math.max(tonumber(vals[i]) or now, now)
  tats[i] = tat
  local avail = math.floor((now - tat) / interval) + burst
  if avail < granted then granted = avail end
  if avail < 1 then
    local w = tat + interval - burst * interval - now
    if w > wait then
      wait = w
      reason = tonumber(ARGV[3 * i - 2])
    end
  end
end

if granted < 1 then
  return {0, wait, reason}
end

for i = 2, #KEYS do
  local new_tat = tats[i] + granted * tonumber(ARGV[3 * i - 4])
  -- Once the TAT is in the past the key means the same as no key, so it
  -- may expire then; the extra millisecond covers rounding to ms.
  redis.call('SET', KEYS[i], new_tat, 'PX', math.ceil((new_tat - now) / 1000) + 1)
end
return {granted, 0, 0}
