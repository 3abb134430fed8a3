-- LeaseHeld: $1 scope, $2 key, $3 reconciler token, $4 lease µs.
--
-- Gives the token an exclusive lease on a live held row unless another
-- token's lease is live (the same token extends its own). Only unindexed
-- columns change. Returns a row only when it applied.
UPDATE {table} SET
	owner = $3::text,
	lease_until = clock_timestamp() + $4::bigint * interval '1 microsecond',
	expires_at = greatest(expires_at, clock_timestamp() + $4::bigint * interval '1 microsecond')
WHERE scope = $1::text AND key = $2::text
	AND state = 3 AND expires_at > clock_timestamp()
	AND (lease_until <= clock_timestamp() OR owner = $3::text)
RETURNING true
