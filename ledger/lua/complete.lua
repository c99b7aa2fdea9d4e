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
--
-- Returns 1, or 0 when the token is not current. The expiry is left
-- alone: retention counts from creation.

local f = redis.call('HMGET', KEYS[1], 'st', 'tok')
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] then return 0 end

redis.call('HSET', KEYS[1], 'st', 'completed', 'lu', '0',
  'os', ARGV[2], 'oh', ARGV[3], 'ob', ARGV[4], 'obh', ARGV[5],
  'obl', ARGV[6], 'oo', ARGV[7], 'oe', ARGV[8])
return 1
