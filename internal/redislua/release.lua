-- release.lua: delete a pending record held by ARGV[1].
--
-- KEYS[1] record key
-- ARGV[1] owner  ARGV[2] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when deleted, 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur or string.sub(cur, 1, 1) ~= 'p' then
	return 0
end
local n = string.byte(cur, 2)
local m = string.byte(cur, 3 + n)
if string.sub(cur, 4 + n, 3 + n + m) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= '' then
	redis.call(ARGV[2], KEYS[1], 'r')
end
return 1
