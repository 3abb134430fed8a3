-- checkpoint.lua: replace the checkpoints of the pending record owned by
-- ARGV[1] (its lease may have lapsed), fenced as complete.lua is. It runs
-- on every step, so, like complete.lua, it reads the record by the fixed
-- offsets record.lua documents and is not prefixed by record.lua. It
-- changes nothing but the checkpoints key, which it gives the record's
-- very expiry (PXAT the record's PEXPIRETIME), so that they die with it.
--
-- KEYS[1] record key  KEYS[2] checkpoints key
-- ARGV[1] owner  ARGV[2] checkpoints ('' = none: delete them)
--
-- Returns 1 when written (a driver's re-send writes the same again), 0
-- otherwise.
local cur = redis.call('GET', KEYS[1])
if not cur then
	return 0
end
local o = ARGV[1]
local m = #o
local st = string.byte(cur, 1)
if st == 80 and string.byte(cur, 2) == m and string.sub(cur, 3, 2 + m) == o then -- 'P', this owner's
	local n = string.byte(cur, 3 + m)
	if not n or #cur < 3 + m + n then
		return redis.error_reply('ONCECORRUPT record layout')
	end
	if ARGV[2] == '' then
		redis.call('DEL', KEYS[2])
		return 1
	end
	local at = redis.call('PEXPIRETIME', KEYS[1])
	if at < 0 then
		return redis.error_reply('ONCECORRUPT record without expiry')
	end
	redis.call('SET', KEYS[2], ARGV[2], 'PXAT', at)
	return 1
end
if st ~= 80 and st ~= 67 and st ~= 72 then -- not 'P', 'C' or 'H': not a record of this layout
	return redis.error_reply('ONCECORRUPT record layout')
end
return 0 -- another owner's, completed or held
