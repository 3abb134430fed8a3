-- complete.lua: store the outcome of a pending record owned by ARGV[1].
-- It runs on every first execution, so it reads the record by fixed
-- offsets (layout in record.lua: state, len(owner), owner, len(fp), fp)
-- and decodes nothing else; it is not prefixed by record.lua. The record's
-- checkpoints, if any, are kept and get the completed record's expiry.
--
-- KEYS[1] record key  KEYS[2] checkpoints key
-- ARGV[1] owner  ARGV[2] outcome  ARGV[3] retention ms (canonical decimal)
-- ARGV[4] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when stored (or already stored by this owner with this very
-- outcome: a driver's re-send), 0 otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local o = ARGV[1]
local m = #o
local st = string.byte(cur, 1)
if string.byte(cur, 2) == m and string.sub(cur, 3, 2 + m) == o and (st == 80 or st == 67) then -- 'P', 'C'
	local n = string.byte(cur, 3 + m)
	if not n or #cur < 3 + m + n then
		return redis.error_reply('ONCECORRUPT record layout')
	end
	if st == 67 then -- completed: a re-send if it holds this outcome
		local sp = string.find(cur, ' ', 4 + m + n, true)
		if sp and string.sub(cur, sp + 1) == ARGV[2] then
			return 1
		end
		return 0
	end
	redis.call('SET', KEYS[1], 'C' .. string.sub(cur, 2, 3 + m + n) .. ARGV[3] .. ' ' .. ARGV[2], 'PX', ARGV[3])
	local at = redis.call('PEXPIRETIME', KEYS[1]) -- as record.lua's keep_steps
	if tonumber(ARGV[3]) >= 1000 then
		redis.call('PEXPIREAT', KEYS[2], at)
	else
		local steps = redis.call('GET', KEYS[2])
		if steps then
			redis.call('SET', KEYS[2], steps, 'PXAT', at)
		end
	end
	if ARGV[4] ~= '' then
		redis.call(ARGV[4], KEYS[1], 'c')
	end
	return 1
end
if st ~= 80 and st ~= 67 and st ~= 72 then -- not 'P', 'C' or 'H': not a record of this layout
	return redis.error_reply('ONCECORRUPT record layout')
end
return 0 -- another owner's, or held: a held owner never completes
