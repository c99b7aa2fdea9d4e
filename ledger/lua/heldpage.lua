-- heldpage.lua reads one page of the held index (ledger.Redis.Held),
-- oldest entry first, and counts the entries per tenant and operation.
--
-- KEYS[1] the entries (sorted set), KEYS[2] their versions (hash); see
--         heldadd.lua
-- ARGV[1] the page starts after this score ("-inf" for the first page)
-- ARGV[2] and, at that score, after this member ("" for none)
-- ARGV[3] tenant filter, ARGV[4] operation filter ("" for any)
-- ARGV[5] entries wanted on the page
-- ARGV[6] entries examined at most, for the page and for the counts each
--
-- Returns {total entries, counts capped "1"/"0", more "1"/"0", the
-- cursor's score and member (the last entry examined: the next page
-- starts after it), n groups, then n times (tenant, operation, count),
-- then the page as (member, score, version) triples}.

local want, cap = tonumber(ARGV[5]), tonumber(ARGV[6])
local function meta(id)
  local m = redis.call('HGET', KEYS[2], id)
  if not m then return nil end
  return cjson.decode(m)
end
local function matches(m)
  return m and (ARGV[3] == '' or m.t == ARGV[3]) and (ARGV[4] == '' or m.o == ARGV[4])
end

-- Counts over the oldest cap entries.
local groups, order = {}, {}
local first = redis.call('ZRANGE', KEYS[1], 0, cap - 1)
for _, id in ipairs(first) do
  local m = meta(id)
  if matches(m) then
    local g = m.t .. '\0' .. m.o -- a group's name: tenant and operation
    if not groups[g] then groups[g] = {m.t, m.o, 0}; order[#order + 1] = g end
    groups[g][3] = groups[g][3] + 1
  end
end
local total = redis.call('ZCARD', KEYS[1])
local capped = '0'
if total > cap then capped = '1' end

-- The page: entries after the cursor, in (score, member) order.
local page = {}
local more = '0'
local from = '(' .. ARGV[1]
if ARGV[1] == '-inf' then from = '-inf' elseif ARGV[2] ~= '' then from = ARGV[1] end
-- ZRANGEBYSCORE, not ZRANGE BYSCORE: the store supports Redis 5. Read in
-- chunks, so a full page costs about its own size, not cap entries.
local nextScore, nextMember = ARGV[1], ARGV[2]
-- offset counts the entries read, examined those after the cursor: the
-- entries at the cursor's score up to its member are read again and
-- skipped, and must not use up cap, or a page whose cursor sits among
-- more than cap entries of one score (Fails in one millisecond) would
-- never move past them.
local offset, examined, chunk, done = 0, 0, math.max(2 * want, 100), false
while not done and examined < cap do
  local n = math.min(chunk, cap - examined)
  local batch = redis.call('ZRANGEBYSCORE', KEYS[1], from, '+inf', 'WITHSCORES', 'LIMIT', offset, n)
  for i = 1, #batch, 2 do
    local id, score = batch[i], batch[i + 1]
    local after = true
    if ARGV[2] ~= '' and tonumber(score) == tonumber(ARGV[1]) and id <= ARGV[2] then after = false end
    if after then
      examined = examined + 1
      local m = meta(id)
      if matches(m) then
        if #page / 3 >= want then more = '1'; done = true; break end
        page[#page + 1] = id
        page[#page + 1] = score
        page[#page + 1] = tostring(m.v)
      end
      nextScore, nextMember = score, id
    end
  end
  offset = offset + #batch / 2
  if #batch / 2 < n then done = true end
  if not done and examined >= cap then more = '1' end
end

local out = {total, capped, more, nextScore, nextMember, #order}
for _, g in ipairs(order) do
  out[#out + 1] = groups[g][1]
  out[#out + 1] = groups[g][2]
  out[#out + 1] = groups[g][3]
end
for _, x in ipairs(page) do out[#out + 1] = x end
return out
