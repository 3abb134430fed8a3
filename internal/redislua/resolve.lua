-- resolve.lua: store an outcome decided out of band for an absent or
-- pending record (whoever owns it) when the fingerprints match; never
-- overwrite a completed record.
--
-- KEYS[1] record key
-- ARGV[1] fingerprint ('' = none: keep the stored one)  ARGV[2] outcome
-- ARGV[3] retention ms
-- ARGV[4] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when stored; otherwise what claim.lua returns for a record it
-- does not claim: the whole record string (completed) or
-- {fingerprint, lease ms left} (pending, fingerprint mismatch).
local cur = redis.call('GET', KEYS[1])
local fp = ARGV[1]
if cur then
	if string.sub(cur, 1, 1) ~= 'p' then
		return cur
	end
	local n = string.byte(cur, 2)
	local stored = string.sub(cur, 3, 2 + n)
	if fp ~= '' and fp ~= stored then
		local m = string.byte(cur, 3 + n)
		local t = redis.call('TIME')
		local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
		return {stored, tonumber(string.sub(cur, 4 + n + m)) - now}
	end
	fp = stored
end
redis.call('SET', KEYS[1], 'c' .. string.char(#fp) .. fp .. string.char(0) .. ARGV[2], 'PX', ARGV[3])
if ARGV[4] ~= '' then
	redis.call(ARGV[4], KEYS[1], 'c')
end
return 1
