-- Release: $1 scope, $2 key, $3 owner. Deletes a live pending row of the
-- owner. {notify} wakes the key's waiters, as in complete.sql.
DELETE FROM {table}
WHERE scope = $1::text AND key = $2::text
	AND state = 1 AND owner = $3::text AND expires_at > clock_timestamp()
RETURNING {notify}
