-- reserve.lua applies ledger.Resolve to one action record in one atomic
-- step: read the record, decide with the server's clock, write the grant.
--
-- KEYS[1]  the record hash, named <prefix>{<Key.ID>}
-- ARGV[1]  request fingerprint, sealed (stored when creating or taking a
--          failed record over)
-- ARGV[2]  owner
-- ARGV[3]  lease, ms
-- ARGV[4]  retention, ms (used only when creating)
-- ARGV[5]  limited       "1" or "0"
-- ARGV[6]  reconciler    "1" or "0"
-- ARGV[7]  keys honoured "1" or "0"
-- ARGV[8]  tenant, ARGV[9] operation, ARGV[10] key (stored, never in a key name)
-- ARGV[11] first fencing token, used only when creating
-- ARGV[12] attempts kept (Config.MaxAttempts)
-- ARGV[13] nonce of this reservation (never empty: the Go side draws one)
-- ARGV[14] marks sending  "1" or "0" (ReserveRequest.MarksSending)
-- ARGV[15] instance: the owner's run (ReserveRequest.Instance), "" if unknown
-- ARGV[16] settle time of this grant's sends, ms (ReserveRequest.Settle)
-- ARGV[17] replaces failed "1" or "0" (ReserveRequest.ReplacesFailed)
-- ARGV[18] sending "1" or "0" (ReserveRequest.Sending): a grant that
--          sends also writes the sending mark, as mark.lua would
-- ARGV[19..] every stored fingerprint that matches the request (the
--          request's fingerprint sealed under each key; see
--          ledger.FingerprintKeys.Candidates)
--
-- Returns {verdict, stored state, lease expired "1"/"0", now ms, token,
-- regrant "1"/"0", unsent "1"/"0", reclaim "1"/"0", settling "1"/"0", then
-- the record's fields and values as HGETALL gives them}, except for a new
-- record (verdict "created" with a token), whose reply is the head alone:
-- every field it wrote comes from ARGV and now. Regrant, unsent,
-- reclaim and settling are the Resolve inputs read before any write: a
-- grant rewrites the fields they come from. The Go side
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
-- The reply: out, then the record's fields and values in pairs.
local function answer(out, fields)
  for i = 1, #fields do out[#out + 1] = fields[i] end
  return out
end

local owner, instance = ARGV[2], ARGV[15]

local f = redis.call('HMGET', KEYS[1], 'st', 'fp', 'tok', 'lu', 'ea', 'na', 'nc', 'gv', 'mk', 'sn', 'ow', 'in', 'su')
local st = f[1] or 'absent'
-- A record past its retention is kept for ledger.ExpiryGrace only so that
-- this script can tell expired from absent (Reservation.Expired).
-- An unknown state stays as it is: never replace what cannot be classified.
local known = st == 'in-progress' or st == 'completed' or st == 'failed' or st == 'uncertain'
if known and f[5] and now > tonumber(f[5]) then st = 'expired' end
local expired = '0'
if st == 'in-progress' and now >= tonumber(f[4]) then expired = '1' end
-- The current grant was made to this very request: its reply was lost.
local regrant = '0'
if f[7] == ARGV[13] then regrant = '1' end
-- The owner promised to mark the action before sending and nobody did.
local unsent = '0'
if f[9] == '1' and f[10] ~= '1' then unsent = '1' end
-- The lease was granted to another run of this very owner, which
-- restarted (ledger.Input.Reclaim): its lease counts as expired.
local reclaim = '0'
if st == 'in-progress' and owner ~= '' and instance ~= '' and f[11] == owner
  and f[12] and f[12] ~= '' and f[12] ~= instance then reclaim = '1' end
-- The last send's settle time has not passed (ledger.Input.Settling).
local settling = '0'
if f[13] and now < tonumber(f[13]) then settling = '1' end

-- send is Resolve's rule for verdicts that would send: a rate-limited
-- destination delays them and leaves the record as it is.
local function send(v)
  if ARGV[5] == '1' then return 'delayed' end
  return v
end

local function matches(fp)
  for i = 19, #ARGV do
    if ARGV[i] == fp then return true end
  end
  return false
end

local verdict
if st == 'absent' or st == 'expired' then
  verdict = send('created')
elseif st ~= 'in-progress' and st ~= 'completed' and st ~= 'failed' and st ~= 'uncertain' then
  verdict = 'uncertain' -- never send what cannot be classified
elseif st == 'failed' and ARGV[17] == '1' then
  -- No effect to guard: a different request takes it over (Resolve).
  verdict = send('retry')
elseif not matches(f[2]) then
  verdict = 'conflict'
elseif st == 'completed' then
  verdict = 'replayed'
elseif st == 'failed' then
  verdict = send('retry')
elseif st == 'in-progress' and regrant == '1' then
  verdict = f[8]
elseif st == 'in-progress' and expired == '0' and reclaim == '0' then
  verdict = 'pending'
elseif st == 'in-progress' and unsent == '1' then
  verdict = send('retry')
elseif ARGV[6] == '1' then
  verdict = 'reconcile'
elseif ARGV[7] == '1' then
  verdict = send('resend')
else
  verdict = 'uncertain'
end

local token = '0'
if st == 'in-progress' and regrant == '1' then
  -- The grant stands as written: hand its token back, write nothing.
  return answer({verdict, st, expired, int(now), f[3], regrant, unsent, reclaim, settling},
    redis.call('HGETALL', KEYS[1]))
elseif verdict == 'created' then
  -- An expired record is replaced whole, and so is whatever else the key
  -- holds.
  redis.call('DEL', KEYS[1])
  token = ARGV[11]
  f[5] = now + tonumber(ARGV[4])
  f[6] = 0
elseif verdict == 'retry' or verdict == 'resend' or verdict == 'reconcile' then
  token = int(tonumber(f[3]) + 1)
end

local out = {verdict, st, expired, int(now), token, regrant, unsent, reclaim, settling}
if token == '0' then return answer(out, redis.call('HGETALL', KEYS[1])) end

local lu = now + tonumber(ARGV[3])
-- Kept a lease past the lease's end, so that a worker that died
-- holding it is still seen as stuck, not as absent.
local ea = math.max(tonumber(f[5]), lu + tonumber(ARGV[3]))
local n = tonumber(f[6]) + 1
local a = cjson.encode({at = int(now), class = verdict, owner = owner, token = token})
-- w is every field the grant writes, in one HSET.
local w = {'st', 'in-progress', 'ow', owner, 'in', instance, 'tok', token,
  'lu', int(lu), 'ea', int(ea), 'na', int(n), 'a' .. int(n), a,
  'nc', ARGV[13], 'gv', verdict, 'mk', ARGV[14], 'sd', ARGV[16]}
local function put(field, value)
  w[#w + 1] = field
  w[#w + 1] = value
end
if verdict == 'created' then
  put('tn', ARGV[8]); put('op', ARGV[9]); put('k', ARGV[10]); put('fp', ARGV[1]); put('ca', int(now))
elseif st == 'failed' and ARGV[17] == '1' then
  -- A failed record takes the fingerprint of the request that takes it
  -- over, which may differ (Resolve).
  put('fp', ARGV[1])
end
-- The grant carries the mark (ReserveRequest.Sending) where it sends:
-- a reconcile only asks, and marks before a send of its own.
if ARGV[18] == '1' and verdict ~= 'reconcile' then
  put('sn', '1'); put('su', int(now + tonumber(ARGV[16])))
end
redis.call('HSET', KEYS[1], unpack(w))
-- The lease extends the retention: a record must outlive its owner.
-- Dropped ledger.ExpiryGrace (3,600,000 ms) after it: see above.
redis.call('PEXPIREAT', KEYS[1], int(ea) + 3600000)
if verdict == 'created' then
  -- The record is exactly what w wrote, all of it from ARGV and now: the
  -- Go side builds it (newRecord), so the reply is the head alone.
  return out
end
redis.call('HDEL', KEYS[1], 'rs')
trim(n)
return answer(out, redis.call('HGETALL', KEYS[1]))
