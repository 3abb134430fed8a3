-- claim.lua: insert a pending claim, take over an expired lease, or report
-- the existing record. One key; server clock; no write on a replay.
--
-- KEYS[1] record key
-- ARGV[1] fingerprint ('' = none)  ARGV[2] owner
-- ARGV[3] lease ms                 ARGV[4] retention ms
--
-- The record lives max(lease, retention): a pending claim never expires
-- while its lease is live. A held record is taken over like a lapsed
-- lease once its hold and any reconciler's lease have ended. Returns 1 (claimed, or already claimed by this
-- owner: a driver's re-send), 2 (claimed by taking over an expired lease),
-- or the existing record (see record.lua).
local cur = redis.call('GET', KEYS[1])
if cur and completed(cur) then
	return cur -- a replay: no parsing, no clock, no write
end
local now = now_ms()
local took = 1
local fp = ARGV[1]
if cur then
	local r = decode(cur)
	if r.state == 'p' and r.owner == ARGV[2] then
		return 1
	end
	if r.lease_end > now or (r.state == 'h' and r.hold_end > now) or not fp_matches(r.fp, fp) then
		return existing(cur, r, now)
	end
	fp = bound_fp(r.fp, fp)
	took = 2
end
local lease = tonumber(ARGV[3])
redis.call('SET', KEYS[1], encode_pending(fp, ARGV[2], now + lease, now),
	'PX', math.max(lease, tonumber(ARGV[4])))
return took
