-- cooldown.lua: pause a boundary for every worker that shares it.
--
-- KEYS[1]  the boundary's cooldown: a string holding the end of the pause
--          in microseconds of Redis TIME (see decide.lua).
-- ARGV[1]  the length of the pause in microseconds. The caller sends a
--          length, not an end time, because its clock is not the fleet's:
--          the end is computed here, on Redis TIME, the one clock every
--          decision reads.
--
-- A pause only ever grows: a shorter cooldown than the one in force is
-- ignored. Reply: microseconds until the pause in force ends.

if redis.replicate_commands then redis.replicate_commands() end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local length = tonumber(ARGV[1])
local pause_end = now + length

local current = tonumber(redis.call('GET', KEYS[1]))
if current and current >= pause_end then
  return current - now
end
redis.call('SET', KEYS[1], pause_end, 'PX', math.ceil(length / 1000) + 1)
return length
