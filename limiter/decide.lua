-- decide.lua: the rate decisions of want requests for one boundary, each
-- sent now or not at all, atomically. The boundary's cooldown and every
-- limit of the boundary (and of the owner's share) are checked in one
-- script run, and each granted request takes a token from all of them.
--
-- KEYS[1]    the boundary's cooldown: a string holding the end of the pause
--            in microseconds of Redis TIME, expiring with the pause.
-- KEYS[2]    the cooldown of the scope the boundary is within (see
--            limiter.Within), in the same form; KEYS[1] again for a
--            boundary within no scope. Either pause refuses the request.
-- KEYS[3..]  one string per limit (the boundary's, then the owner's share),
--            holding the limit's theoretical arrival time (TAT) in
--            microseconds of Redis TIME.
-- ARGV[1]    the clock: 0 means Redis TIME; anything else is "now" in µs,
--            which only tests send, to check the arithmetic against a fake
--            clock; keys then live a minute longer (see keep).
-- ARGV[2]    want: the number of requests (coalesced decisions), or the
--            prefetch size. As many are granted as every limit has tokens
--            for, in order: the first granted of them are granted.
-- ARGV[3..]  for each limit key, three values: its emission interval (µs),
--            its burst, and the reason to report when it refuses (1 for a
--            boundary limit, 2 for an owner's share).
--
-- Reply {want} when every request was granted, else {granted, wait_us,
-- reason, next_1, ..., next_L}: granted is the number of tokens taken,
-- wait_us how long until one more could be taken and reason the code of
-- the limit that decides it, or 3 when the boundary is paused by a
-- cooldown (wait_us is then the rest of the pause), 5 when its scope's
-- pause is the one that ends last. next_i is, for each
-- limit, µs from now until its next token after the grant (negative when
-- it is due already, and then no lower than -want*interval, which means
-- the same): a refused request j places itself at the latest of
-- next_i + j*interval_i, as if the refused requests before it had queued.
--
-- GCRA: a limit with emission interval T and burst B allows k more requests
-- now when tat + k*T - B*T <= now, where tat = max(stored TAT, now); taking
-- them moves the TAT to tat + k*T. The condition is "<=", so a request
-- exactly at the window edge is allowed: B requests at once, then one every
-- T, and never more than Rate+B-1 in any window of one Period. Granting k
-- requests at once is the same as k decisions in a row.
--
-- Three commands for one limit (TIME, MGET, SET), so that the server,
-- which runs scripts one at a time, spends as little as possible on each
-- round trip, however many requests it decides.

-- Writes after TIME need effects replication, the default since Redis 5;
-- older servers need to be asked for it.
if redis.replicate_commands then redis.replicate_commands() end

-- TIME is {seconds, microseconds}. Their sum in microseconds (about 1.8e15)
-- is far below 2^53, so Lua's doubles hold it exactly, and since intervals
-- are whole microseconds every value below is an exact integer too. Only
-- tostring() would lose digits (it prints 14); redis.call() arguments are
-- converted with full precision.
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

local vals = redis.call('MGET', unpack(KEYS))
local pause_end, pause_reason = tonumber(vals[1]) or 0, 3
local scope_end = tonumber(vals[2]) or 0
if scope_end > pause_end then pause_end, pause_reason = scope_end, 5 end
if pause_end > now then
  local reply = {0, pause_end - now, pause_reason}
  for i = 3, #KEYS do reply[i + 1] = pause_end - now end
  return reply
end

-- Limit i (from 1) is KEYS[i + 2] with its value in vals[i + 2], and its
-- interval, burst and reason in ARGV[3i], ARGV[3i + 1], ARGV[3i + 2].
local nlim = #KEYS - 2
local want = tonumber(ARGV[2])
local granted = want
-- vals[i + 2] becomes limit i's TAT: reusing the table spares the server
-- an allocation on every decision.
for i = 1, nlim do
  -- A missing key (false) or a TAT in the past means a full bucket.
  local tat = tonumber(vals[i + 2]) or now
  if tat < now then tat = now end
  vals[i + 2] = tat
  local avail = math.floor((now - tat) / ARGV[3 * i]) + ARGV[3 * i + 1]
  if avail < granted then granted = math.max(avail, 0) end
end

if granted > 0 then
  for i = 1, nlim do
    local tat = vals[i + 2] + granted * ARGV[3 * i]
    vals[i + 2] = tat
    -- Once the TAT is in the past the key means the same as no key, so it
    -- may expire then; the extra millisecond covers rounding to ms.
    redis.call('SET', KEYS[i + 2], tat, 'PX', math.ceil((tat - now) / 1000) + 1 + keep)
  end
  -- Every request granted, the common case: nothing more to say.
  if granted == want then return {granted} end
end

local reply = {granted, 0, 0}
for i = 1, nlim do
  local interval = tonumber(ARGV[3 * i])
  local next = vals[i + 2] + interval - ARGV[3 * i + 1] * interval - now
  -- A limit with a deep bucket may have its next token due far in the
  -- past. Refused request j (j < want) is placed at next + j*interval,
  -- and a place below zero means now, so anything below -want*interval
  -- says the same; the floor keeps the integer reply exact (2^53).
  next = math.max(next, -want * interval, -9007199254740992)
  reply[i + 3] = next
  if next > reply[2] then
    reply[2] = next
    reply[3] = tonumber(ARGV[3 * i + 2])
  end
end
return reply
