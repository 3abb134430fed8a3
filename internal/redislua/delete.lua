-- delete.lua: delete a record and its checkpoints whatever its state or
-- owner, for operators. A pending owner's later complete, renew, release
-- or checkpoint finds no record and applies nothing; waiters are woken as
-- after a release.
--
-- KEYS[1] record key  KEYS[2] checkpoints key
-- ARGV[1] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when a record was deleted, 0 when the key was absent.
local n = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
if n == 0 then
	return 0
end
notify(ARGV[1], KEYS[1], 'r')
return 1
