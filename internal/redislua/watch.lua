-- watch.lua: mark the record of KEYS[1], if it is an unmarked pending
-- one ('P' becomes 'Q', in place: SETRANGE keeps the expiry), so that its
-- completion notifies its watchers (see record.lua and complete.lua).
-- Store.Watch runs it once the subscription is confirmed, so a completion
-- after Watch returned finds the mark. It reads the state byte alone and
-- is not prefixed by record.lua.
--
-- KEYS[1] record key
--
-- Returns 1.
local cur = redis.call('GETRANGE', KEYS[1], 0, 0)
if cur == 'P' then
	redis.call('SETRANGE', KEYS[1], 0, 'Q')
end
return 1
