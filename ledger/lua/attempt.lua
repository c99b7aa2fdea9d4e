-- attempt.lua appends one send to an action's history, fenced by the
-- owner's token, and starts the send's settle time again from now.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
-- ARGV[2] class
-- ARGV[3] attempts kept (Config.MaxAttempts)
-- ARGV[4] this call's nonce (see fail.lua's wn)
--
-- Returns {n, now ms, owner}, or 0 when the token is not current or the
-- record is past its retention.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function int(n) return string.format('%d', n) end
-- Keep the newest ARGV[3] attempts: drop the ones before them, stopping
-- at the first already gone.
local function trim(n)
  for i = n - tonumber(ARGV[3]), 1, -1 do
    if redis.call('HDEL', KEYS[1], 'a' .. int(i)) == 0 then break end
  end
end

-- A record past its retention is no one's to write: see mark.lua.
local function expired(ea) return ea ~= false and ea ~= nil and now > tonumber(ea) end

local f = redis.call('HMGET', KEYS[1], 'st', 'tok', 'ow', 'sd', 'wn', 'na', 'ea')
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] then return 0 end
if f[5] == ARGV[4] then
  -- This very call ran already: its entry is the newest one.
  local e = cjson.decode(redis.call('HGET', KEYS[1], 'a' .. f[6]))
  return {tonumber(f[6]), e.at, f[3]}
end
if expired(f[7]) then return 0 end

local n = redis.call('HINCRBY', KEYS[1], 'na', 1)
local a = cjson.encode({at = int(now), class = ARGV[2], owner = f[3], token = f[2]})
-- No sd: a grant written before settle times were kept (see mark.lua).
redis.call('HSET', KEYS[1], 'a' .. int(n), a, 'su', int(now + tonumber(f[4] or '30000')), 'wn', ARGV[4])
trim(n)
return {n, int(now), f[3]}
