-- mark.lua records that the owner is about to send the action, fenced by
-- its token, and starts the send's settle time. The mark stays for the
-- record's life.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
--
-- Returns 1, or 0 when the token is not current.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local f = redis.call('HMGET', KEYS[1], 'st', 'tok', 'sd')
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] then return 0 end

-- A grant written before settle times were kept has no sd: 30,000 ms is
-- ledger.DefaultLease, the settle time's default.
redis.call('HSET', KEYS[1], 'sn', '1', 'su', string.format('%d', now + tonumber(f[3] or '30000')))
return 1
