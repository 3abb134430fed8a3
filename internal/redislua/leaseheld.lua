-- leaseheld.lua: give a reconciler (ARGV[1]) an exclusive lease on a held
-- record, unless another reconciler's lease is live.
--
-- KEYS[1] record key  KEYS[2] checkpoints key (kept; they follow the expiry)
-- ARGV[1] reconciler token  ARGV[2] lease ms
--
-- The record lives at least until the lease ends. Returns 1 when leased,
-- 0 when the key is absent, else {record, ttl} (see record.lua).
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local r = decode(cur)
local t = ttl(KEYS[1])
if r.state ~= 'H' or (t > r.lease_tail and r.owner ~= ARGV[1]) then
	return {cur, t}
end
local lease = tonumber(ARGV[2])
local exp = math.max(t, lease)
local moved = exp - t
r.owner, r.lease_tail = ARGV[1], exp - lease
r.life, r.hold_tail = r.life + moved, r.hold_tail + moved
set(encode_held(r), exp, moved == 0)
return 1
