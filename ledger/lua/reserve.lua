-- reserve.lua applies ledger.Resolve to one action record in one atomic
-- step: read the record, decide with the server's clock, write the grant.
--
-- KEYS[1]  the record hash, named <prefix>{<Key.ID>}
-- ARGV[1]  request fingerprint
-- ARGV[2]  owner
-- ARGV[3]  lease, ms
-- ARGV[4]  retention, ms (used only when creating)
-- ARGV[5]  limited       "1" or "0"
-- ARGV[6]  reconciler    "1" or "0"
-- ARGV[7]  keys honoured "1" or "0"
-- ARGV[8]  tenant, ARGV[9] operation, ARGV[10] key (stored, never in a key name)
-- ARGV[11] first fencing token, used only when creating
-- ARGV[12] attempts kept (Config.MaxAttempts)
--
-- Returns {verdict, stored state, lease expired "1"/"0", now ms, token,
-- then the record's fields and values as HGETALL gives them}. The Go side
-- recomputes Resolve from the stored state reported here and refuses a
-- verdict that differs, so this file and resolve.go cannot drift silently.

-- Server time, so every client of the fleet shares one clock. Seconds
-- times 1000 stays far below 2^53, so the double is an exact integer.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- %d, not tostring: tostring prints only 14 significant digits.
local function int(n) return string.format('%d', n) end
-- Keep the newest ARGV[12] attempts: drop the ones before them, stopping
-- at the first already gone.
local function trim(n)
  for i = n - tonumber(ARGV[12]), 1, -1 do
    if redis.call('HDEL', KEYS[1], 'a' .. int(i)) == 0 then break end
  end
end

local f = redis.call('HMGET', KEYS[1], 'st', 'fp', 'tok', 'lu', 'ea', 'na')
local st = f[1] or 'absent'
local expired = '0'
if st == 'in-progress' and now >= tonumber(f[4]) then expired = '1' end

-- send is Resolve's rule for verdicts that would send: a rate-limited
-- destination delays them and leaves the record as it is.
local function send(v)
  if ARGV[5] == '1' then return 'delayed' end
  return v
end

local verdict
if st == 'absent' then
  verdict = send('created')
elseif st ~= 'in-progress' and st ~= 'completed' and st ~= 'failed' and st ~= 'uncertain' then
  verdict = 'uncertain' -- never send what cannot be classified
elseif f[2] ~= ARGV[1] then
  verdict = 'conflict'
elseif st == 'completed' then
  verdict = 'replayed'
elseif st == 'failed' then
  verdict = send('retry')
elseif st == 'in-progress' and expired == '0' then
  verdict = 'pending'
elseif ARGV[6] == '1' then
  verdict = 'reconcile'
elseif ARGV[7] == '1' then
  verdict = send('resend')
else
  verdict = 'uncertain'
end

local token = '0'
if verdict == 'created' then
  token = ARGV[11]
  f[5] = now + tonumber(ARGV[4])
  f[6] = 0
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'tn', ARGV[8], 'op', ARGV[9], 'k', ARGV[10],
    'fp', ARGV[1], 'ca', int(now))
elseif verdict == 'retry' or verdict == 'resend' or verdict == 'reconcile' then
  token = int(tonumber(f[3]) + 1)
end

if token ~= '0' then
  local lu = now + tonumber(ARGV[3])
  -- Kept a lease past the lease's end, so that a worker that died
  -- holding it is still seen as stuck, not as absent.
  local ea = math.max(tonumber(f[5]), lu + tonumber(ARGV[3]))
  local n = tonumber(f[6]) + 1
  local a = cjson.encode({at = int(now), class = verdict, owner = ARGV[2], token = token})
  redis.call('HSET', KEYS[1], 'st', 'in-progress', 'ow', ARGV[2], 'tok', token,
    'lu', int(lu), 'ea', int(ea), 'na', int(n), 'a' .. int(n), a)
  redis.call('HDEL', KEYS[1], 'rs')
  trim(n)
  -- The lease extends the retention: a record must outlive its owner.
  redis.call('PEXPIREAT', KEYS[1], int(ea))
end

local out = {verdict, st, expired, int(now), token}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do out[#out + 1] = all[i] end
return out
