-- release.lua: end the pending record owned by ARGV[1], so that the next
-- claim succeeds at once: delete it when it has no checkpoints; keep it
-- with its checkpoints otherwise, its lease ended now and its expiry
-- unchanged, so that the next claim with a matching fingerprint takes it
-- over and gets them (claim.lua).
--
-- KEYS[1] record key  KEYS[2] checkpoints key
-- ARGV[1] owner  ARGV[2] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when deleted or ended (a re-send ends it again), 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local r = decode(cur)
if r.state ~= 'P' or r.owner ~= ARGV[1] then
	return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 then
	local t = ttl(KEYS[1])
	set(encode_pending(r.owner, r.fp, r.life, t), t, true)
else
	redis.call('DEL', KEYS[1])
end
notify(ARGV[2], KEYS[1], 'r')
return 1
