-- get.lua: read a record for operators. One key; server clock; no write.
--
-- KEYS[1] record key
--
-- Returns 0 when the key is absent, else {record, now ms, ttl ms} where
-- record is the whole string (layout in record.lua) and ttl is its PTTL.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
decode(cur)
return {cur, now_ms(), redis.call('PTTL', KEYS[1])}
