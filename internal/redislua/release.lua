-- release.lua: delete a pending record owned by ARGV[1].
--
-- KEYS[1] record key
-- ARGV[1] owner  ARGV[2] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when deleted, 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local r = decode(cur)
if r.state ~= 'P' or r.owner ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
notify(ARGV[2], KEYS[1], 'r')
return 1
