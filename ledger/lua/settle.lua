-- settle.lua records an operator's settlement (ledger.Settler), fenced by
-- the token the operator's takeover holds: completed with the provider's
-- answer, or failed without effect, and the audit trail, in one step.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
-- ARGV[2] applied "1" (completed) or "0" (failed)
-- ARGV[3] by, ARGV[4] reason, ARGV[5] reference
-- ARGV[6] this call's nonce (see fail.lua's wn)
-- ARGV[7..13] with applied: status, headers (JSON), body, body SHA-256,
--          body length, body omitted "1"/"0", encrypted "1"/"0", as
--          complete.lua takes them
--
-- Returns the settlement's time (Unix ms, the server's clock), or 0 when
-- the token is not current or the record is past its retention.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A record past its retention is no one's to write: see mark.lua.
local function expired(ea) return ea ~= false and ea ~= nil and now > tonumber(ea) end

local f = redis.call('HMGET', KEYS[1], 'st', 'tok', 'wn', 'xa', 'ea')
if f[1] ~= 'in-progress' and f[2] == ARGV[1] and f[3] == ARGV[6] then return tonumber(f[4]) end
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] or expired(f[5]) then return 0 end

redis.call('HSET', KEYS[1], 'lu', '0', 'xb', ARGV[3], 'xr', ARGV[4], 'xf', ARGV[5],
  'xp', ARGV[2], 'xa', string.format('%d', now), 'wn', ARGV[6])
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'st', 'completed',
    'os', ARGV[7], 'oh', ARGV[8], 'ob', ARGV[9], 'obh', ARGV[10],
    'obl', ARGV[11], 'oo', ARGV[12], 'oe', ARGV[13])
else
  redis.call('HSET', KEYS[1], 'st', 'failed', 'rs', ARGV[4])
end
return now
