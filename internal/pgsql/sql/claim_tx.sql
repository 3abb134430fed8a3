-- ClaimTx: a claim in a caller's transaction (postgres.Store.InTx, DoTx),
-- in one statement: read_claim.sql's read and insert_claim.sql's insert.
-- Parameters as insert_claim.sql; the answer is read_claim.sql's row, or
-- one row with state 0 when ins inserted the claim, or none when ins
-- conflicted with a row the statement cannot see (the caller then sends
-- takeover.sql).
--
-- e reads the row, as of the statement's snapshot, without locking it. At
-- READ COMMITTED ins runs only when e saw no row (a one-time filter): a
-- replay, an in-progress and a mismatch read and write what read_claim.sql
-- does, and a first execution writes what insert_claim.sql writes, with
-- its lock_timeout (c) set before the insert runs.
--
-- At REPEATABLE READ and SERIALIZABLE e reads the transaction's snapshot,
-- which may predate a change another transaction committed to the key's
-- row: a delete, a delete and a new record with another outcome, a
-- completion of the pending row e sees. A replay, an in-progress and a
-- mismatch write nothing, so PostgreSQL would raise no serialization
-- failure, and the statement would answer from the old row. So at those
-- levels ins runs whether or not e saw a row: its INSERT … ON CONFLICT DO
-- NOTHING checks the row it conflicts with, the key's current committed
-- version, against the snapshot and fails with SQLSTATE 40001 when the
-- snapshot does not see that version (a row inserted or changed after
-- it), or, when e's row is unchanged, inserts nothing, locks nothing and
-- writes nothing, as at READ COMMITTED. It waits, at most the lock_timeout
-- of c (set before the insert runs), for a transaction not yet ended that
-- wrote the row. When e's row was deleted after the snapshot and the key
-- has no row now, ins inserts the claim, as it would on an absent key,
-- and the statement returns ins's row only.
--
-- The isolation is read once per statement (current_setting, a stable
-- function: a one-time filter).
WITH e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at, r.hold_until, r.claimed_at, r.steps
	FROM {table} r
	WHERE r.scope = $1::text AND r.key = $2::text
), ins AS (
	INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, claimed_at)
	SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
		c.now + $5::bigint * interval '1 microsecond',
		c.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
		c.now
	FROM (SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout) c
	WHERE NOT EXISTS (SELECT 1 FROM e) OR current_setting('transaction_isolation') <> 'read committed'
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true
)
SELECT 0::smallint, NULL::bytea, NULL::bytea, false,
	NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::bytea
FROM ins
UNION ALL
SELECT e.state, e.fingerprint, e.outcome, coalesce(e.owner = $4::text, false),
	e.lease_until, e.expires_at, e.hold_until, clock_timestamp(), e.claimed_at,
	CASE WHEN e.state = 1 AND e.owner = $4::text THEN e.steps END
FROM e
WHERE NOT EXISTS (SELECT 1 FROM ins)
