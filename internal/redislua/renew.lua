-- renew.lua: move the lease end of a pending record held by ARGV[1] to
-- now + ARGV[2] ms (server clock). The record's TTL is kept.
--
-- KEYS[1] record key
-- ARGV[1] owner  ARGV[2] lease ms
--
-- Returns 1 when renewed, 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur or string.sub(cur, 1, 1) ~= 'p' then
	return 0
end
local n = string.byte(cur, 2)
local m = string.byte(cur, 3 + n)
if string.sub(cur, 4 + n, 3 + n + m) ~= ARGV[1] then
	return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], string.sub(cur, 1, 3 + n + m) .. string.format('%d', now + tonumber(ARGV[2])), 'KEEPTTL')
return 1
