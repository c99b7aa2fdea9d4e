-- renew.lua extends the current owner's lease, fenced by its token.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
-- ARGV[2] lease, ms
--
-- Returns 1, or 0 when the token is not current (or the record is gone).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function int(n) return string.format('%d', n) end

local f = redis.call('HMGET', KEYS[1], 'st', 'tok', 'ea')
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] or now > tonumber(f[3]) then return 0 end

local lu = now + tonumber(ARGV[2])
-- A lease past the lease's end: see reserve.lua.
local ea = math.max(tonumber(f[3]), lu + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'lu', int(lu), 'ea', int(ea))
-- Dropped ledger.ExpiryGrace (3,600,000 ms) after it: see reserve.lua.
redis.call('PEXPIREAT', KEYS[1], int(ea) + 3600000)
return 1
