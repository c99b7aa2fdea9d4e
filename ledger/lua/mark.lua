-- mark.lua records that the owner is about to send the action, fenced by
-- its token, and starts the send's settle time. The mark stays for the
-- record's life.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
--
-- Returns 1, or 0 when the token is not current or the record is past
-- its retention.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- A record past its retention (ea) is kept for ledger.ExpiryGrace only so
-- that reserve.lua can tell expired from absent: it is no one's to write
-- (renew.lua refuses it too), and the next Reserve creates the action anew.
local function expired(ea) return ea ~= false and ea ~= nil and now > tonumber(ea) end

local f = redis.call('HMGET', KEYS[1], 'st', 'tok', 'sd', 'ea')
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] or expired(f[4]) then return 0 end

-- A grant written before settle times were kept has no sd: 30,000 ms is
-- ledger.DefaultLease, the settle time's default.
redis.call('HSET', KEYS[1], 'sn', '1', 'su', string.format('%d', now + tonumber(f[3] or '30000')))
return 1
