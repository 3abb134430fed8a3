-- Claim: $1 scope, $2 key, $3 fingerprint, $4 owner, $5 lease µs,
-- $6 retention µs, $7 lock_timeout for the statement.
--
-- The whole first execution, replay, in progress and mismatch in one
-- statement that costs what the hand-written mechanism costs. e reads the
-- row, as of the statement's snapshot, without locking it: on a replay, an
-- in progress and a mismatch that indexed read is all the statement does
-- (ins is gated on NOT EXISTS (e), a one-time filter), and it writes
-- nothing. When e found nothing, ins is the plain INSERT … ON CONFLICT DO
-- NOTHING of a hand-written idempotency table, into a table whose only
-- index is the primary key, and the statement returns its
-- one row, with state 0.
--
-- Otherwise it returns e's row as stored, with owner = $4 and the server's
-- clock: the caller decides from the timestamps whether the row is live,
-- its lease lapsed, how long its lease and retention have left and how
-- long ago a pending row was claimed (claimed_at) (in Go: no numeric arithmetic on the server, whose
-- extract(epoch …) costs more than the statement's read).
--
-- The last column is the row's checkpoints (steps) only when the row is
-- this very owner's pending claim (a re-send after a lost reply, whose
-- answer carries them); NULL otherwise, so that a replay, an in-progress
-- and a mismatch never send, or detoast, the blob.
--
-- It never takes a record over: when the row it returns had expired, or was
-- pending with a lapsed lease (or held, its hold and reconciler lease
-- ended) and a matching fingerprint, or when it returns no row at all (the
-- insert conflicted with a row committed after the statement's snapshot),
-- the caller sends takeover.sql, which decides those rare cases.
--
-- The one-row subquery c reads the clock once and sets lock_timeout local
-- to the statement's transaction before the insert runs (a volatile output
-- of a subquery is always evaluated), so that waiting for a concurrent
-- uncommitted transaction that holds the key (a DoTx) is bounded; it
-- reverts when the statement, or the caller's transaction, ends.
--
-- A new record lives at least until its lease ends, whatever the retention
-- (expires_at). No later write changes an indexed column, so completions
-- and renewals are HOT updates.
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
	WHERE NOT EXISTS (SELECT 1 FROM e)
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
