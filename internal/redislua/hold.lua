-- hold.lua: turn the pending record owned by ARGV[1] into a held record.
--
-- KEYS[1] record key  KEYS[2] checkpoints key (kept; they follow the expiry)
-- ARGV[1] owner  ARGV[2] hold ms  ARGV[3] code  ARGV[4] message
-- ARGV[5] retention ms
-- ARGV[6] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- The held record lives max(hold, retention) from now, held since now
-- with no reconciler lease (its lease ends now). Returns 1 when held (or
-- already held by this owner: a driver's re-send), 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local r = decode(cur)
if r.owner ~= ARGV[1] or r.state == 'C' then
	return 0
end
if r.state == 'H' then
	return 1
end
local hold = tonumber(ARGV[2])
local life = math.max(hold, tonumber(ARGV[5]))
r.life, r.lease_tail, r.hold_tail = life, life, life - hold
r.code, r.message = ARGV[3], ARGV[4]
set(encode_held(r), life, false)
notify(ARGV[6], KEYS[1], 'h')
return 1
