-- claim.lua: insert a pending claim, take over an expired lease, or report
-- the existing record. One key; server clock; no write on a replay.
--
-- KEYS[1] record key
-- ARGV[1] fingerprint ('' = none)  ARGV[2] owner
-- ARGV[3] lease ms                 ARGV[4] retention ms
--
-- Returns 1 (claimed), 2 (claimed by taking over an expired lease),
-- the whole record string (completed), or {fingerprint, lease ms left}
-- (pending, not claimable).
--
-- Record layout (one string):
--   pending:   'p' len(fp) fp len(owner) owner lease-end-ms(decimal)
--   completed: 'c' len(fp) fp len(owner) owner outcome
-- where len(x) is one byte.
local cur = redis.call('GET', KEYS[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local took = 1
if cur then
	if string.sub(cur, 1, 1) ~= 'p' then
		return cur
	end
	local n = string.byte(cur, 2)
	local m = string.byte(cur, 3 + n)
	if string.sub(cur, 4 + n, 3 + n + m) == ARGV[2] then
		-- The same owner again: a driver retry of a claim that was applied.
		return 1
	end
	local fp = string.sub(cur, 3, 2 + n)
	local left = tonumber(string.sub(cur, 4 + n + m)) - now
	if left > 0 or (ARGV[1] ~= '' and ARGV[1] ~= fp) then
		return {fp, left}
	end
	took = 2
end
redis.call('SET', KEYS[1],
	'p' .. string.char(#ARGV[1]) .. ARGV[1] .. string.char(#ARGV[2]) .. ARGV[2] ..
	string.format('%d', now + tonumber(ARGV[3])),
	'PX', ARGV[4])
return took
