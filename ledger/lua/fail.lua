-- fail.lua gives an action up without an outcome, fenced by the owner's
-- token: "failed" when no effect was possible, "uncertain" otherwise.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
-- ARGV[2] new state, "failed" or "uncertain"
-- ARGV[3] reason
-- ARGV[4] class of the owner's last send (Failure.AttemptClass), recorded
--         as attempt.lua would; "" records none
-- ARGV[5] attempts kept (Config.MaxAttempts)
-- ARGV[6] this call's nonce, kept as wn. The client re-sends a script
--         whose reply it lost (go-redis retries a command, or a whole
--         pipeline, after a broken connection), and the first run may
--         have written: a run that finds its own nonce on the record,
--         under its token, answers as the first run did and writes
--         nothing. complete.lua, settle.lua and attempt.lua do the same.
--
-- Returns 1, or 0 when the token is not current or the record is past
-- its retention.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A record past its retention is no one's to write: see mark.lua.
local function expired(ea) return ea ~= false and ea ~= nil and now > tonumber(ea) end

local f = redis.call('HMGET', KEYS[1], 'st', 'tok', 'ow', 'sd', 'wn', 'ea')
if f[1] == ARGV[2] and f[2] == ARGV[1] and f[5] == ARGV[6] then return 1 end
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] or expired(f[6]) then return 0 end
-- The send this settles, recorded as attempt.lua records one: a history
-- entry and the settle time started again (no sd: see mark.lua).
if ARGV[4] ~= '' then
  local function int(n) return string.format('%d', n) end
  local n = redis.call('HINCRBY', KEYS[1], 'na', 1)
  local a = cjson.encode({at = int(now), class = ARGV[4], owner = f[3], token = f[2]})
  redis.call('HSET', KEYS[1], 'a' .. int(n), a, 'su', int(now + tonumber(f[4] or '30000')))
  for i = n - tonumber(ARGV[5]), 1, -1 do
    if redis.call('HDEL', KEYS[1], 'a' .. int(i)) == 0 then break end
  end
end

redis.call('HSET', KEYS[1], 'st', ARGV[2], 'lu', '0', 'rs', ARGV[3], 'wn', ARGV[6])
return 1
