-- Get (Admin): $1 scope, $2 key, $3 whether to read the checkpoints. The
-- live row with the lease and the retention left on the server's clock,
-- in microseconds, its age (since the claim, or the hold; 0 when unknown
-- or completed), a held row's hold left, code and message, and, when $3,
-- its checkpoints (steps, NULL for none): Admin.Get reads them, the
-- Claim, Resolve and LeaseHeld that read a held record's details do not.
-- A plain SELECT:
-- no row lock, no write. The age is negative for a row stamped by a clock
-- ahead of this one (a clock stepped back, another server's row): the Go
-- side clamps it at 0, so this hot statement computes nothing more.
SELECT r.state, r.fingerprint, r.outcome,
	coalesce((extract(epoch FROM r.lease_until - c.now) * 1000000)::bigint, 0),
	(extract(epoch FROM r.expires_at - c.now) * 1000000)::bigint,
	coalesce((extract(epoch FROM c.now - coalesce(r.held_at, r.claimed_at)) * 1000000)::bigint, 0),
	coalesce((extract(epoch FROM r.hold_until - c.now) * 1000000)::bigint, 0),
	coalesce(r.held_code, ''), coalesce(r.held_message, ''),
	CASE WHEN $3::boolean THEN r.steps END
FROM {table} r, (SELECT clock_timestamp() AS now) c
WHERE r.scope = $1::text AND r.key = $2::text AND r.expires_at > c.now
