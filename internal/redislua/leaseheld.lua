-- leaseheld.lua: give a reconciler (ARGV[1]) an exclusive lease on a held
-- record, unless another reconciler's lease is live.
--
-- KEYS[1] record key
-- ARGV[1] reconciler token  ARGV[2] lease ms
--
-- The record lives at least until the lease ends. Returns 1 when leased,
-- 0 when the key is absent, else the existing record (see record.lua).
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
if completed(cur) then
	return cur
end
local r = decode(cur)
local now = now_ms()
if r.state ~= 'h' or (r.lease_end > now and r.owner ~= ARGV[1]) then
	return existing(cur, r, now)
end
local lease = tonumber(ARGV[2])
r.owner, r.lease_end = ARGV[1], now + lease
if redis.call('PTTL', KEYS[1]) < lease then
	redis.call('SET', KEYS[1], encode_held(r), 'PX', ARGV[2])
else
	redis.call('SET', KEYS[1], encode_held(r), 'KEEPTTL')
end
return 1
