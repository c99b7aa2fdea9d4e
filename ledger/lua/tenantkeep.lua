-- tenantkeep.lua extends a record's count in its tenant's index (see
-- tenant.lua) after its owner renewed its lease: a renewal can keep the
-- record past the time it was counted until.
--
-- KEYS[1] the tenant's index
-- ARGV[1] the record's ID (ledger.Key.ID)
-- ARGV[2] how long the record can live from now, ms: two leases plus
--         ledger.ExpiryGrace
--
-- Returns 1 when the ID was counted, else 0 (nothing is added: a record
-- the index does not know was written before the quota was set).

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- %d, not tostring: tostring prints only 14 significant digits.
local function int(n) return string.format('%d', n) end

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return 0 end
local until_ = now + tonumber(ARGV[2])
if until_ > tonumber(score) then
  redis.call('ZADD', KEYS[1], int(until_), ARGV[1])
  -- The index lives as long as its longest-lived member.
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  redis.call('PEXPIREAT', KEYS[1], last[2])
end
return 1
