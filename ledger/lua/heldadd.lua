-- heldadd.lua enters one action in the held index (ledger.Redis.Held)
-- before its record is made uncertain. The index lives in a slot of its
-- own, so this runs as a command of its own, never inside the record's
-- script: written first, an entry may outlive a change that never
-- happened (the lister drops it), but a held record never lacks one.
--
-- KEYS[1] the entries, a sorted set: member the action's Key.ID, score
--         when it was first entered (Unix ms, the server's clock)
-- KEYS[2] the entries' versions and identities, a hash: Key.ID to JSON
--         {v = version, t = tenant, o = operation}
-- ARGV[1] Key.ID, ARGV[2] tenant, ARGV[3] operation
-- ARGV[4] the most entries kept (ledger.MaxHeldEntries): past it the
--         oldest is dropped, and only Sweep finds its action
--
-- Returns the entry's new version. Every entry bumps it, so a lister that
-- read an older version never removes an entry made after it looked.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1])
local v = 1
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then v = cjson.decode(old).v + 1 end
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode({v = v, t = ARGV[2], o = ARGV[3]}))
if redis.call('ZCARD', KEYS[1]) > tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)
  redis.call('ZREM', KEYS[1], oldest[1])
  redis.call('HDEL', KEYS[2], oldest[1])
end
return v
