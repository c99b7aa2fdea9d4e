-- budget.lua: one retry budget decision for one destination, atomically:
-- credit this process's pending deposits, then, when asked, check the rule
-- and spend one retry. All of it in one script run, so racing processes
-- cannot overshoot.
--
-- KEYS[1]  the destination's hash. Fields:
--            d:<slot>  first attempts (deposits) counted in that slot
--            r:<slot>  retries allowed in that slot
--            ft        the floor bucket's tokens
--            fa        when ft was last refilled, microseconds of TIME
--          where <slot> is the slot number since the Unix epoch. It
--          expires after two windows (at least one second) without calls.
-- ARGV[1]  deposits to credit first (0 or more)
-- ARGV[2]  '1' to withdraw one retry, '0' to only credit deposits
-- ARGV[3]  percent: retries allowed per deposit in the window, in [0, 1]
-- ARGV[4]  floor: retries per second allowed whatever the traffic, >= 0
-- ARGV[5]  slot width in microseconds: the window is ten slots
-- ARGV[6]  key TTL in milliseconds
--
-- Reply {allowed, deposits, retries}: allowed is 1 or 0; deposits and
-- retries are the window's totals after this call.
--
-- The rule, the same as budget.Local's: a retry is allowed while
-- retries + 1 <= percent * deposits over the window, or else while the
-- floor bucket (refilled at floor per second, holding at most one second's
-- worth) has a whole token, which it takes. Either way it counts as a
-- retry, so floor retries use up percent credit too.

-- Writes after TIME need effects replication, the default since Redis 5;
-- older servers need to be asked for it.
if redis.replicate_commands then redis.replicate_commands() end

-- TIME is {seconds, microseconds}. Their sum in microseconds (about 1.8e15)
-- is far below 2^53, so Lua's doubles hold it and the slot numbers exactly.
-- tostring() would print only 14 digits, hence string.format('%d') for the
-- field names; redis.call() converts numbers with full precision.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local credit = tonumber(ARGV[1])
local want = ARGV[2] == '1'
local percent = tonumber(ARGV[3])
local floor = tonumber(ARGV[4])
local width = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])

local slot = math.floor(now / width)
local oldest = slot - 9 -- the window is slots oldest..slot

-- Sum the window and prune what has left it. The hash holds at most 22
-- live fields, so reading it whole is cheap, and it finds stale slots that
-- a lookup by name would miss after an idle spell. Slots newer than now
-- (a failover to a server whose clock is behind) are counted, as
-- Local counts a clock that goes back into the current slot.
local deposits, retries = 0, 0
local tokens, filled
local stale = {}
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local f, v = fields[i], fields[i + 1]
  if f == 'ft' then
    tokens = tonumber(v)
  elseif f == 'fa' then
    filled = tonumber(v)
  else
    local n = tonumber(string.sub(f, 3))
    local kind = string.sub(f, 1, 2)
    if n == nil or n < oldest then
      stale[#stale + 1] = f
    elseif kind == 'd:' then
      deposits = deposits + tonumber(v)
    elseif kind == 'r:' then
      retries = retries + tonumber(v)
    else
      stale[#stale + 1] = f
    end
  end
end
if #stale > 0 then
  redis.call('HDEL', KEYS[1], unpack(stale))
end

local here = string.format('%d', slot)
if credit > 0 then
  redis.call('HINCRBY', KEYS[1], 'd:' .. here, credit)
  deposits = deposits + credit
end

local allowed = 0
if want then
  -- The same comparison in doubles as Local's, so that both decide
  -- alike at the boundary.
  if retries + 1 <= percent * deposits then
    allowed = 1
  elseif floor > 0 then
    -- A missing bucket is a full one: it was never used, or has been idle
    -- for longer than the key's TTL, which is at least the one second
    -- that refills it.
    if tokens == nil or filled == nil then
      tokens, filled = floor, now
    end
    -- Refilling only when the bucket is consulted gives the same tokens as
    -- refilling on every call, because capped refills compose.
    if now > filled then
      tokens = math.min(floor, tokens + (now - filled) / 1000000 * floor)
      filled = now
    end
    if tokens >= 1 then
      tokens = tokens - 1
      allowed = 1
    end
    redis.call('HSET', KEYS[1], 'ft', tokens, 'fa', filled)
  end
  if allowed == 1 then
    redis.call('HINCRBY', KEYS[1], 'r:' .. here, 1)
    retries = retries + 1
  end
end

redis.call('PEXPIRE', KEYS[1], ttl)
return {allowed, deposits, retries}
