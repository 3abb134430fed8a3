-- Takeover: the claim's slow path, sent only after the claim's read
-- (read_claim.sql, claim_tx.sql) found the key held by a record that had
-- expired, or that was pending with a lapsed lease and a matching
-- fingerprint, or after its insert found the key taken by a row the claim
-- could not see. Parameters as insert_claim.sql.
--
-- e reads the row as of the statement's snapshot, without locking it.
-- Then at most one of two writes acts:
--
--   * ins inserts the claim when e saw no row. ON CONFLICT DO NOTHING
--     covers a row committed after the snapshot: the insert does nothing
--     and the caller runs the statement again with a fresh snapshot.
--   * upd replaces the row when e saw it expired, or pending with a lapsed
--     lease, or held with its hold and reconciler lease ended, and a
--     matching fingerprint (t). It clears the held columns (NULL to NULL
--     on a pending row: still a HOT update). It is conditioned on the exact
--     row e observed (state, owner, lease, expiry), so of two concurrent
--     takeovers one applies and the other sees the row changed and is
--     re-run. A takeover keeps the row's checkpoints (steps) and returns
--     them, as they are when it writes (a checkpoint the previous owner
--     committed after e's snapshot included); a replaced expired row
--     starts with none.
--
-- A live completed row, or a live lease, satisfies neither write: the
-- statement then only reads, takes no row lock and writes nothing.
--
-- The answer's last columns are a pending row's age (since claimed_at) and the row's time left
-- before it expires (a completed row's ExpiresIn): this is the
-- slow path, so the server computes them, as it computes the lease left;
-- then the checkpoints of the claim it answers: those upd kept, or, when
-- e saw this very owner's live pending row (a re-send), that row's; NULL
-- for any other answer, so that a replay never carries them.
--
-- c sets lock_timeout local to the statement's transaction before either
-- write reads c (see insert_claim.sql). Only unindexed columns change: a HOT
-- update. A takeover without a fingerprint keeps the stored one; either
-- side empty matches.
WITH c AS (
	SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout
), e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at, r.hold_until, r.claimed_at, r.steps
	FROM {table} r
	WHERE r.scope = $1::text AND r.key = $2::text
), ins AS (
	INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, claimed_at)
	SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
		c.now + $5::bigint * interval '1 microsecond',
		c.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
		c.now
	FROM c
	WHERE NOT EXISTS (SELECT 1 FROM e)
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true AS done
), t AS (
	SELECT e.state, e.fingerprint, e.owner, e.lease_until, e.expires_at, e.expires_at > c.now AS took_over, c.now
	FROM e, c
	WHERE e.expires_at <= c.now
		OR (((e.state = 1 AND e.lease_until <= c.now)
				OR (e.state = 3 AND e.lease_until <= c.now AND e.hold_until <= c.now))
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
		claimed_at = t.now,
		held_at = NULL,
		hold_until = NULL,
		held_code = NULL,
		held_message = NULL,
		steps = CASE WHEN t.took_over THEN r.steps END
	FROM t
	WHERE EXISTS (SELECT 1 FROM t)
		AND r.scope = $1::text AND r.key = $2::text
		AND r.state = t.state
		AND r.expires_at = t.expires_at
		AND r.owner IS NOT DISTINCT FROM t.owner
		AND r.lease_until IS NOT DISTINCT FROM t.lease_until
	RETURNING t.took_over, r.steps
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
	coalesce(e.owner = $4::text AND e.state = 1 AND e.expires_at > c.now, false),
	coalesce((extract(epoch FROM c.now - e.claimed_at) * 1000000)::bigint, 0),
	coalesce((extract(epoch FROM e.expires_at - c.now) * 1000000)::bigint, 0),
	CASE WHEN EXISTS (SELECT 1 FROM upd) THEN (SELECT steps FROM upd)
		WHEN e.owner = $4::text AND e.state = 1 AND e.expires_at > c.now THEN e.steps END
FROM c LEFT JOIN e ON true
