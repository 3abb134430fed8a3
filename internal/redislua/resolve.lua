-- resolve.lua: store an outcome decided out of band for an absent, pending
-- (whoever owns it, once its lease lapsed) or held record when the
-- fingerprints match (on a held record, unless another token's reconciler
-- lease is live); never overwrite a completed record.
--
-- KEYS[1] record key  KEYS[2] checkpoints key (a resolved record keeps its
-- checkpoints, which follow its expiry; an absent key gets none)
-- ARGV[1] fingerprint ('' = none: keep the stored one)  ARGV[2] owner token
-- ARGV[3] outcome  ARGV[4] retention ms (canonical decimal)
-- ARGV[5] notification command ('PUBLISH', 'SPUBLISH' or '')
-- ARGV[6] '1': resolve only a held record ARGV[2] (non-empty) leased with
--         leaseheld.lua (ResolveParams.OnlyLeased); '' otherwise
--
-- Returns 1 when stored, or when the record already holds this owner
-- token (non-empty) and this outcome (a driver's re-send); otherwise
-- {record, ttl} (see record.lua), or 0 for an absent key with ARGV[6].
local cur = redis.call('GET', KEYS[1])
local fp = ARGV[1]
if not cur and ARGV[6] == '1' then
	return 0 -- absent: the next intent's key
end
if cur then
	local r = decode(cur)
	if r.state == 'C' and ARGV[2] ~= '' and r.owner == ARGV[2] and outcome(cur, r) == ARGV[3] then
		return 1
	end
	local t = ttl(KEYS[1])
	if r.state == 'C' or not fp_matches(r.fp, fp) then
		return {cur, t}
	end
	-- Not a held record this token leased: another intent's, a takeover's
	-- claim, or a hold nobody leased (hold.lua ends its lease when the
	-- hold starts: lease_tail = life; a lease taken since ends after it).
	if ARGV[6] == '1' and (r.state ~= 'H' or ARGV[2] == '' or r.owner ~= ARGV[2] or r.lease_tail >= r.life) then
		return {cur, t}
	end
	-- A live reconciler lease of another token on a held record: that
	-- reconciler resolves this key.
	if r.state == 'H' and t > r.lease_tail and r.owner ~= ARGV[2] then
		return {cur, t}
	end
	-- A live claim: its owner is running.
	if r.state == 'P' and t > r.lease_tail then
		return {cur, t}
	end
	fp = bound_fp(r.fp, fp)
else
	redis.call('DEL', KEYS[2]) -- none but an eviction's leftovers
end
set(encode_completed(ARGV[2], fp, ARGV[4], ARGV[3]), ARGV[4], false)
notify(ARGV[5], KEYS[1], 'c')
return 1
