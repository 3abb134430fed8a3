-- get.lua: read a record with its TTL, for operators and listings. One
-- key; no write.
--
-- KEYS[1] record key
--
-- Returns 0 when the key is absent, else {record, ttl} (see record.lua).
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
decode(cur)
return {cur, ttl(KEYS[1])}
