-- get.lua: read a record for operators. One key; server clock; no write.
--
-- KEYS[1] record key
--
-- Returns 0 when the key is absent, else {record, ttl ms, lease ms left}
-- where record is the whole string (layout in claim.lua), ttl is PTTL and
-- lease ms left is the pending lease end minus TIME (0 when completed).
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local ttl = redis.call('PTTL', KEYS[1])
local left = 0
if string.sub(cur, 1, 1) == 'p' then
	local n = string.byte(cur, 2) or 0
	local m = string.byte(cur, 3 + n) or 0
	local t = redis.call('TIME')
	local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	left = (tonumber(string.sub(cur, 4 + n + m)) or now) - now
end
return {cur, ttl, left}
