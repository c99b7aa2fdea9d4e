-- mark.lua records that the owner is about to send the action, fenced by
-- its token. The mark stays for the record's life.
--
-- KEYS[1] the record hash
-- ARGV[1] fencing token
--
-- Returns 1, or 0 when the token is not current.

local f = redis.call('HMGET', KEYS[1], 'st', 'tok')
if f[1] ~= 'in-progress' or f[2] ~= ARGV[1] then return 0 end

redis.call('HSET', KEYS[1], 'sn', '1')
return 1
