-- InsertClaim: a claim's insert: $1 scope, $2 key, $3 fingerprint,
-- $4 owner, $5 lease µs, $6 retention µs, $7 lock_timeout for the
-- statement.
--
-- The plain INSERT … ON CONFLICT DO NOTHING of a hand-written idempotency
-- table, into a table whose only index is the primary key: its command tag
-- counts one row when it inserted the claim, none when the key has a row.
-- It returns no row: the command tag is the answer, and a RETURNING list,
-- even of a constant, costs the server a result row per claim. A conflict
-- writes nothing and takes no lock, so a replay that meets it writes no
-- WAL. The Store sends it first while most of its recent claims
-- met new keys (then read_claim.sql when it inserted nothing), and after
-- read_claim.sql otherwise, when the read saw no row; when that insert,
-- too, inserts nothing (a row committed after the read's snapshot), the
-- caller sends takeover.sql.
--
-- A new record lives at least until its lease ends, whatever the retention
-- (expires_at). No later write changes an indexed column, so completions
-- and renewals are HOT updates.
--
-- The one-row subquery c reads the clock once and sets lock_timeout local
-- to the statement's transaction before the insert runs (a volatile output
-- of a subquery is always evaluated), so that waiting for a concurrent
-- uncommitted transaction that holds the key (a DoTx) is bounded; it
-- reverts when the statement, or the caller's transaction, ends. The
-- insert waits whenever a transaction not yet ended inserted, updated or
-- deleted the key's row, also when the row's committed version answers
-- the claim (a reconciler's transaction that leased a held record), so
-- when it goes first the caller gives it 1ms and, past that, reads the
-- committed version (read_claim.sql) without waiting; after a read that
-- saw no row it gets Config.LockTimeout.
INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, claimed_at)
SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
	c.now + $5::bigint * interval '1 microsecond',
	c.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
	c.now
FROM (SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout) c
ON CONFLICT (scope, key) DO NOTHING
