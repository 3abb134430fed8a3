-- Claim: $1 scope, $2 key, $3 fingerprint, $4 owner, $5 lease µs,
-- $6 retention µs, $7 lock_timeout for the statement.
--
-- The whole first execution, replay, in progress and mismatch in one
-- statement that costs what the hand-written mechanism costs: ins is the
-- plain INSERT … ON CONFLICT DO NOTHING; when it inserted, the statement
-- returns its one row and nothing else runs (the read is gated on NOT
-- EXISTS (ins), a one-time filter). On a conflict the unique index's
-- pre-check finds the row, nothing is written or locked, and the second
-- branch reads the row, as of the statement's snapshot, with the time left
-- on the server's clock.
--
-- It never takes a record over: when the row it returns had expired, or was
-- pending with a lapsed lease and a matching fingerprint, or when it
-- returns no row at all (the conflicting row was committed after the
-- statement's snapshot), the caller sends takeover.sql, which decides
-- those rare cases.
--
-- The one-row subquery c reads the clock once and sets lock_timeout local
-- to the statement's transaction before the insert runs (a volatile
-- output of a subquery is always evaluated), so that waiting for a
-- concurrent uncommitted transaction that holds the key (a DoTx) is
-- bounded; it reverts when the statement, or the caller's transaction,
-- ends.
--
-- A new record lives at least until its lease ends, whatever the retention
-- (expires_at). sweep_after, the sweeper's indexed column, is claim time +
-- lease + retention; no later write changes it unless the record is
-- re-created, so completions and renewals are HOT updates.
WITH ins AS (
	INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, sweep_after)
	SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
		c.now + $5::bigint * interval '1 microsecond',
		c.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
		c.now + ($5::bigint + $6::bigint) * interval '1 microsecond'
	FROM (SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout) c
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true
)
SELECT true, false, 0::smallint, NULL::bytea, NULL::bytea, 0::bigint, false, false FROM ins
UNION ALL
SELECT false,
	r.expires_at > c.now,
	r.state,
	r.fingerprint,
	r.outcome,
	coalesce((extract(epoch FROM r.lease_until - c.now) * 1000000)::bigint, 0),
	r.state = 1 AND r.lease_until <= c.now,
	r.state = 1 AND r.owner = $4::text AND r.expires_at > c.now
FROM {table} r, (SELECT clock_timestamp() AS now) c
WHERE NOT EXISTS (SELECT 1 FROM ins) AND r.scope = $1::text AND r.key = $2::text
