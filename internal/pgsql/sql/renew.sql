-- Renew: $1 scope, $2 key, $3 owner, $4 lease µs.
--
-- Fenced by the owner token of a live pending row. The record lives at
-- least until the new lease ends. No indexed column changes: a HOT update.
-- Returns no row: its command tag counts the row it updated, one exactly
-- when it applied.
UPDATE {table} SET
	lease_until = clock_timestamp() + $4::bigint * interval '1 microsecond',
	expires_at = greatest(expires_at, clock_timestamp() + $4::bigint * interval '1 microsecond')
WHERE scope = $1::text AND key = $2::text
	AND state = 1 AND owner = $3::text AND expires_at > clock_timestamp()
