-- complete.lua: store the outcome of a pending record held by ARGV[1].
--
-- KEYS[1] record key
-- ARGV[1] owner  ARGV[2] outcome  ARGV[3] retention ms
-- ARGV[4] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when stored (or already stored by this owner with this very
-- outcome: a driver's re-send), 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local r = decode(cur)
if r.owner ~= ARGV[1] or r.state == 'h' then
	return 0 -- another owner's, or held: a held owner never completes
end
if r.state == 'c' then
	if outcome(cur, r) == ARGV[2] then
		return 1
	end
	return 0
end
redis.call('SET', KEYS[1], encode_completed(r.fp, r.owner, ARGV[2]), 'PX', ARGV[3])
notify(ARGV[4], KEYS[1], 'c')
return 1
