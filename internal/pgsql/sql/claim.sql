-- Claim: $1 scope, $2 key, $3 fingerprint, $4 owner, $5 lease µs,
-- $6 retention µs, $7 lock_timeout for the statement.
--
-- ins tries the plain insert first, exactly as a hand-written
-- INSERT … ON CONFLICT DO NOTHING does: on a first execution that is all the
-- statement does (the other parts are gated on NOT EXISTS (ins) and become
-- one-time filters). On a conflict the unique index's pre-check finds the
-- row and nothing is written or locked.
--
-- Only then e reads the row, as of the statement's snapshot, without
-- locking it, and upd takes it over when it had expired, or was pending
-- with a lapsed lease and a matching fingerprint (t). upd is conditioned on
-- the exact row e observed (state, owner, lease, expiry), so of two
-- concurrent takeovers one applies and the other sees the row changed. A
-- row that ins conflicted with but e cannot see was committed after the
-- snapshot: the caller runs the statement again.
--
-- c sets lock_timeout local to the statement's transaction before ins
-- reads c, so that waiting for a concurrent uncommitted transaction that
-- holds the key (a DoTx) is bounded; it reverts when the statement (or the
-- caller's transaction) ends.
--
-- A new record lives at least until its lease ends, whatever the
-- retention (expires_at). sweep_after, the sweeper's indexed column, is
-- claim time + lease + retention, and no later write changes it unless the
-- record is re-created, so completions and renewals are HOT updates. A
-- takeover without a fingerprint keeps the stored one; either side empty
-- matches.
WITH c AS (
	SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout
), ins AS (
	INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, sweep_after)
	SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
		c.now + $5::bigint * interval '1 microsecond',
		c.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
		c.now + ($5::bigint + $6::bigint) * interval '1 microsecond'
	FROM c
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true AS done
), e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at
	FROM {table} r
	WHERE NOT EXISTS (SELECT 1 FROM ins) AND r.scope = $1::text AND r.key = $2::text
), t AS (
	SELECT e.state, e.fingerprint, e.owner, e.lease_until, e.expires_at, e.expires_at > c.now AS took_over, c.now
	FROM e, c
	WHERE e.expires_at <= c.now
		OR (e.state = 1 AND e.lease_until <= c.now
			AND (octet_length($3::bytea) = 0 OR octet_length(e.fingerprint) = 0 OR e.fingerprint = $3::bytea))
), upd AS (
	UPDATE {table} r SET
		fingerprint = CASE WHEN t.took_over AND octet_length($3::bytea) = 0
			THEN t.fingerprint ELSE $3::bytea END,
		state = 1,
		owner = $4::text,
		lease_until = t.now + $5::bigint * interval '1 microsecond',
		outcome = NULL,
		expires_at = t.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
		sweep_after = CASE WHEN t.took_over THEN r.sweep_after
			ELSE t.now + ($5::bigint + $6::bigint) * interval '1 microsecond' END
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
	coalesce((extract(epoch FROM e.lease_until - c.now) * 1000000)::bigint, 0),
	coalesce(e.owner = $4::text AND e.state = 1 AND e.expires_at > c.now, false)
FROM c LEFT JOIN e ON true
