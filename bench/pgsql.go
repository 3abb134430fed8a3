package main

// The PostgreSQL baseline sends the backend's own statements, copied here
// verbatim (the backend keeps them unexported and the benchmark exposes
// nothing new); TestSQLMatchesBackend fails when they drift apart. %[1]s
// is the quoted, schema-qualified table.

// rawClaimSQL is backends/postgres claimSQL. Parameters: $1 scope, $2 key,
// $3 fingerprint, $4 owner, $5 lease and $6 retention in microseconds.
const rawClaimSQL = `WITH c AS (
	SELECT clock_timestamp() AS now
), e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at
	FROM %[1]s r
	WHERE r.scope = $1::text AND r.key = $2::text
), ins AS (
	INSERT INTO %[1]s (scope, key, fingerprint, state, owner, lease_until, created_at, expires_at)
	SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
		c.now + $5::bigint * interval '1 microsecond',
		c.now,
		c.now + $6::bigint * interval '1 microsecond'
	FROM c
	WHERE NOT EXISTS (SELECT 1 FROM e)
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true AS done
), t AS (
	SELECT e.state, e.owner, e.lease_until, e.expires_at, e.expires_at > c.now AS took_over, c.now
	FROM e, c
	WHERE e.expires_at <= c.now
		OR (e.state = 1 AND e.lease_until <= c.now
			AND (octet_length($3::bytea) = 0 OR e.fingerprint = $3::bytea))
), upd AS (
	UPDATE %[1]s r SET
		fingerprint = $3::bytea,
		state = 1,
		owner = $4::text,
		lease_until = t.now + $5::bigint * interval '1 microsecond',
		outcome = NULL,
		created_at = t.now,
		completed_at = NULL,
		expires_at = t.now + $6::bigint * interval '1 microsecond'
	FROM t
	WHERE EXISTS (SELECT 1 FROM t)
		AND r.scope = $1::text AND r.key = $2::text
		AND r.state = t.state
		AND r.expires_at = t.expires_at
		AND r.owner IS NOT DISTINCT FROM t.owner
		AND r.lease_until IS NOT DISTINCT FROM t.lease_until
	RETURNING t.took_over
)
SELECT
	EXISTS (SELECT 1 FROM ins),
	(SELECT took_over FROM upd),
	e.state IS NOT NULL,
	coalesce(e.expires_at > c.now, false),
	coalesce(e.state, 0),
	e.fingerprint,
	e.outcome,
	coalesce((extract(epoch FROM e.lease_until - c.now) * 1000000)::bigint, 0)
FROM c LEFT JOIN e ON true`

// rawCompleteSQL is backends/postgres completeSQL: $1 scope, $2 key,
// $3 owner, $4 outcome, $5 retention µs.
const rawCompleteSQL = `UPDATE %[1]s SET
	state = 2,
	lease_until = NULL,
	outcome = $4::bytea,
	completed_at = CASE WHEN state = 2 THEN completed_at ELSE clock_timestamp() END,
	expires_at = CASE WHEN state = 2 THEN expires_at
		ELSE clock_timestamp() + $5::bigint * interval '1 microsecond' END
WHERE scope = $1::text AND key = $2::text
	AND owner = $3::text AND expires_at > clock_timestamp()
	AND (state = 1 OR (state = 2 AND outcome = $4::bytea))
RETURNING true`
