-- complete.lua stores the destination's response and moves the action to
-- completed, fenced by the owner's token. The Go side has already filtered
-- the headers and capped the body.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
-- ARGV[2] status
-- ARGV[3] headers, JSON
-- ARGV[4] body (binary safe)
-- ARGV[5] body SHA-256, hex
-- ARGV[6] body length
-- ARGV[7] body omitted "1" or "0"
-- ARGV[8] headers and body encrypted "1" or "0" (ledger.EncryptionKeys)
-- ARGV[9] class of the send this outcome answers (Outcome.AttemptClass),
--         recorded as attempt.lua would; "" records none
-- ARGV[10] attempts kept (Config.MaxAttempts)
-- ARGV[11] this call's nonce (see fail.lua's wn)
--
-- Returns 1, or 0 when the token is not current or the record is past
-- its retention. The expiry is left alone: retention counts from creation.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A record past its retention is no one's to write: see mark.lua.
local function expired(ea) return ea ~= false and ea ~= nil and now > tonumber(ea) end

local f = redis.call('HMGET', KEYS[1], 'st', 'tok', 'ow', 'sd', 'wn', 'ea')
if f[1] == 'completed' and f[2] == ARGV[1] and f[5] == ARGV[11] then return 1 end
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] or expired(f[6]) then return 0 end
-- w is every field the outcome writes, in one HSET.
local w = {'st', 'completed', 'lu', '0', 'wn', ARGV[11],
  'os', ARGV[2], 'oh', ARGV[3], 'ob', ARGV[4], 'obh', ARGV[5],
  'obl', ARGV[6], 'oo', ARGV[7], 'oe', ARGV[8]}
-- The send this settles, recorded as attempt.lua records one: a history
-- entry and the settle time started again (no sd: see mark.lua).
if ARGV[9] ~= '' then
  local function int(n) return string.format('%d', n) end
  local n = redis.call('HINCRBY', KEYS[1], 'na', 1)
  local a = cjson.encode({at = int(now), class = ARGV[9], owner = f[3], token = f[2]})
  w[#w + 1] = 'a' .. int(n)
  w[#w + 1] = a
  w[#w + 1] = 'su'
  w[#w + 1] = int(now + tonumber(f[4] or '30000'))
  for i = n - tonumber(ARGV[10]), 1, -1 do
    if redis.call('HDEL', KEYS[1], 'a' .. int(i)) == 0 then break end
  end
end
redis.call('HSET', KEYS[1], unpack(w))
return 1
