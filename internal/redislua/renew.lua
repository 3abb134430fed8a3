-- renew.lua: move the lease end of a pending record owned by ARGV[1] to
-- now + ARGV[2] ms (server clock), and its expiry to at least that.
--
-- KEYS[1] record key  KEYS[2] checkpoints key (kept; they follow the expiry)
-- ARGV[1] owner  ARGV[2] lease ms
--
-- Returns 1 when renewed, 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local r = decode(cur)
if r.state ~= 'P' or r.owner ~= ARGV[1] then
	return 0
end
local t = ttl(KEYS[1])
local lease = tonumber(ARGV[2])
local exp = math.max(t, lease)
set(encode_pending(r.owner, r.fp, r.life + exp - t, exp - lease), exp, exp == t)
return 1
