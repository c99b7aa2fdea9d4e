-- fail.lua gives an action up without an outcome, fenced by the owner's
-- token: "failed" when no effect was possible, "uncertain" otherwise.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
-- ARGV[2] new state, "failed" or "uncertain"
-- ARGV[3] reason
--
-- Returns 1, or 0 when the token is not current.

local f = redis.call('HMGET', KEYS[1], 'st', 'tok')
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] then return 0 end

redis.call('HSET', KEYS[1], 'st', ARGV[2], 'lu', '0', 'rs', ARGV[3])
return 1
