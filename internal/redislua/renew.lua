-- renew.lua: move the lease end of a pending record held by ARGV[1] to
-- now + ARGV[2] ms (server clock), and its expiry to at least that.
--
-- KEYS[1] record key
-- ARGV[1] owner  ARGV[2] lease ms
--
-- Returns 1 when renewed, 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local r = decode(cur)
if r.state ~= 'p' or r.owner ~= ARGV[1] then
	return 0
end
local lease = tonumber(ARGV[2])
local v = encode_pending(r.fp, r.owner, now_ms() + lease, r.since)
if redis.call('PTTL', KEYS[1]) < lease then
	redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
else
	redis.call('SET', KEYS[1], v, 'KEEPTTL')
end
return 1
