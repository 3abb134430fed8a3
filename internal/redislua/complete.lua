-- complete.lua: store the outcome of a pending record held by ARGV[1].
--
-- KEYS[1] record key
-- ARGV[1] owner  ARGV[2] outcome  ARGV[3] retention ms
-- ARGV[4] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when stored (or already stored by this owner with this very
-- outcome: a driver retry), 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local n = string.byte(cur, 2)
local m = string.byte(cur, 3 + n)
if string.sub(cur, 4 + n, 3 + n + m) ~= ARGV[1] then
	return 0
end
local st = string.sub(cur, 1, 1)
if st == 'c' then
	if string.sub(cur, 4 + n + m) == ARGV[2] then
		return 1
	end
	return 0
end
if st ~= 'p' then
	return 0
end
redis.call('SET', KEYS[1], 'c' .. string.sub(cur, 2, 3 + n + m) .. ARGV[2], 'PX', ARGV[3])
if ARGV[4] ~= '' then
	redis.call(ARGV[4], KEYS[1], 'c')
end
return 1
