// Package pgsql holds the PostgreSQL backend's claim and complete
// statements. They live here, not in backends/postgres, so that the
// benchmark's raw-driver baseline (bench/) sends the very same text
// without the library. %[1]s is the quoted, schema-qualified table.
package pgsql

// Claim is the single statement behind the backend's Claim. Parameters: $1 scope,
// $2 key, $3 fingerprint, $4 owner, $5 lease and $6 retention in
// microseconds, $7 the lock_timeout for the statement.
//
// c sets lock_timeout for the statement's own transaction (set_config
// local: it reverts when the statement, or the caller's transaction,
// ends), before either write reads c, so that waiting for a concurrent
// uncommitted claim of the key (a DoTx in progress) is bounded.
//
// A new record lives at least until its lease ends, whatever the
// retention. A takeover without a fingerprint keeps the stored one; an
// empty fingerprint on either side matches.
//
// The CTE e reads the row as of the statement's snapshot, without locking
// it. Then at most one of two writes acts:
//
//   - ins inserts the claim when e saw no row. ON CONFLICT DO NOTHING covers
//     a row committed after the snapshot: the insert does nothing and the
//     caller runs the statement again with a fresh snapshot.
//   - upd replaces the row when e saw it expired, or pending with an expired
//     lease and a matching fingerprint (the CTE t). It is conditioned on the
//     exact row e observed (state, owner, lease, expiry), so of two
//     concurrent takeovers only one applies; the other finds the row changed
//     and is re-run.
//
// A live completed row, or a live lease, satisfies neither write: the
// statement then only reads, takes no row lock and writes nothing. The
// uncorrelated EXISTS becomes a one-time filter, so upd does not even scan
// the index on that path.
const Claim = `WITH c AS (
	SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout
), e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at
	FROM %[1]s r
	WHERE r.scope = $1::text AND r.key = $2::text
), ins AS (
	INSERT INTO %[1]s (scope, key, fingerprint, state, owner, lease_until, created_at, expires_at)
	SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
		c.now + $5::bigint * interval '1 microsecond',
		c.now,
		c.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond'
	FROM c
	WHERE NOT EXISTS (SELECT 1 FROM e)
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true AS done
), t AS (
	SELECT e.state, e.fingerprint, e.owner, e.lease_until, e.expires_at, e.expires_at > c.now AS took_over, c.now
	FROM e, c
	WHERE e.expires_at <= c.now
		OR (e.state = 1 AND e.lease_until <= c.now
			AND (octet_length($3::bytea) = 0 OR octet_length(e.fingerprint) = 0 OR e.fingerprint = $3::bytea))
), upd AS (
	UPDATE %[1]s r SET
		fingerprint = CASE WHEN t.took_over AND octet_length($3::bytea) = 0
			THEN t.fingerprint ELSE $3::bytea END,
		state = 1,
		owner = $4::text,
		lease_until = t.now + $5::bigint * interval '1 microsecond',
		outcome = NULL,
		created_at = t.now,
		completed_at = NULL,
		expires_at = t.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond'
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

// Complete is the statement behind the backend's Complete. Parameters:
// $1 scope, $2 key, $3 owner, $4 outcome, $5 retention in microseconds.
// The owner stays on the completed row so that a repeated Complete by
// the same owner with the same outcome (a retry after a lost reply)
// applies again instead of reading as a lost lease.
const Complete = `UPDATE %[1]s SET
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
