-- heldprune.lua removes held-index entries whose records were found
-- settled or gone (ledger.Redis.Held), each only if its version is still
-- the one the lister read before it read the record: an entry made again
-- since (the action became uncertain once more) stays.
--
-- KEYS[1] the entries (sorted set), KEYS[2] their versions (hash)
-- ARGV    Key.ID, version pairs
--
-- Returns how many entries it removed.

local n = 0
for i = 1, #ARGV, 2 do
  local m = redis.call('HGET', KEYS[2], ARGV[i])
  if m and tostring(cjson.decode(m).v) == ARGV[i + 1] then
    redis.call('ZREM', KEYS[1], ARGV[i])
    redis.call('HDEL', KEYS[2], ARGV[i])
    n = n + 1
  end
end
return n
