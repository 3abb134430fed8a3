-- get.lua: read a record with its TTL, for operators and listings, and
-- its checkpoints when KEYS[2] is given (Admin.Get; List reads without).
-- No write.
--
-- KEYS[1] record key  KEYS[2] checkpoints key (optional)
--
-- Returns 0 when the key is absent, else {record, ttl} (see record.lua),
-- or {record, ttl, checkpoints} when KEYS[2] is given and holds them.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
decode(cur)
local t = ttl(KEYS[1])
local steps = KEYS[2] and redis.call('GET', KEYS[2])
if steps then
	return {cur, t, steps}
end
return {cur, t}
