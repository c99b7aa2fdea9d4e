-- tenant.lua admits a Reserve against its tenant's record quota
-- (RedisConfig.TenantMaxRecords). The tenant's index is a sorted set of the
-- record IDs it holds, each scored by when its record is gone at the
-- latest (Unix ms); a record is counted until then.
--
-- KEYS[1] the tenant's index, <prefix>tenant:{<SHA-256 of the tenant>}
-- ARGV[1] the record's ID (ledger.Key.ID)
-- ARGV[2] the quota, records
-- ARGV[3] how long the record can live from now, ms: retention or two
--         leases, whichever is longer, plus ledger.ExpiryGrace. A record
--         already counted is counted as long again: the Reserve may take
--         it over (two leases at most) or, past its retention, create it
--         anew over it (its whole life), and this script cannot tell which
--         (the record is in another cluster slot). Counting a takeover
--         longer only makes the quota stricter.
--
-- Returns {admitted 1/0, records counted}. A record already counted is
-- always admitted, so a tenant at its quota still gets replays and
-- takeovers of what it holds; only a new record is refused.

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- %d, not tostring: tostring prints only 14 significant digits.
local function int(n) return string.format('%d', n) end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', int(now))
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
local until_ = now + tonumber(ARGV[3])
if score then
  until_ = math.max(tonumber(score), until_)
else
  local n = redis.call('ZCARD', KEYS[1])
  if n >= tonumber(ARGV[2]) then return {0, n} end
end
redis.call('ZADD', KEYS[1], int(until_), ARGV[1])
-- The index lives as long as its longest-lived member.
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[1], last[2])
return {1, redis.call('ZCARD', KEYS[1])}
