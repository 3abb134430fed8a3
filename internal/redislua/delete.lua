-- delete.lua: delete a record whatever its state or owner, for operators.
-- A pending owner's later complete, renew or release finds no record and
-- applies nothing; waiters are woken as after a release.
--
-- KEYS[1] record key
-- ARGV[1] notification command ('PUBLISH', 'SPUBLISH' or '')
--
-- Returns 1 when a record was deleted, 0 when the key was absent.
if redis.call('DEL', KEYS[1]) == 0 then
	return 0
end
notify(ARGV[1], KEYS[1], 'r')
return 1
