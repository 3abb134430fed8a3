-- claim.lua: the claim's slow path. Store.Claim first claims with a plain
-- SET NX GET (no script); it runs this script only when that found a
-- record it cannot answer by itself (a lapsed lease, an ended hold, or the
-- caller's own claim, whose checkpoints the SET does not read), so that
-- the decision is taken again, atomically. The script decides every case,
-- as if it were the first: insert a pending claim, take over a lapsed
-- lease or an ended hold (keeping the record's checkpoints), or report
-- the existing record.
--
-- KEYS[1] record key  KEYS[2] checkpoints key
-- ARGV[1] owner  ARGV[2] fingerprint ('' = none)
-- ARGV[3] lease ms  ARGV[4] retention ms
--
-- The record lives max(lease, retention): a pending claim never expires
-- while its lease is live. Returns 1 (claimed, or already claimed by this
-- owner: a driver's re-send) or 2 (claimed by taking over a lapsed lease
-- or an ended hold) when the claimed record has no checkpoints, {1 or 2,
-- checkpoints} when it has, or {record, ttl} (see record.lua).
local cur = redis.call('GET', KEYS[1])
local took = 1
local fp = ARGV[2]
if cur then
	local r = decode(cur)
	local t = ttl(KEYS[1])
	if r.state == 'C' then
		return {cur, t}
	end
	if r.state == 'P' and r.owner == ARGV[1] then
		local steps = redis.call('GET', KEYS[2])
		if steps then
			return {1, steps}
		end
		return 1
	end
	if t > r.lease_tail or (r.state == 'H' and t > r.hold_tail) or not fp_matches(r.fp, fp) then
		return {cur, t}
	end
	fp = bound_fp(r.fp, fp)
	took = 2
else
	-- A new intent starts with no checkpoints (they expired with their
	-- record; this drops any left behind by an eviction).
	redis.call('DEL', KEYS[2])
end
local lease = tonumber(ARGV[3])
local life = math.max(lease, tonumber(ARGV[4]))
set(encode_pending(ARGV[1], fp, life, life - lease), life, false)
if took == 2 then
	local steps = redis.call('GET', KEYS[2])
	if steps then
		return {2, steps}
	end
end
return took
