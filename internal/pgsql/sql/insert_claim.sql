-- InsertClaim: the first statement of a claim when Config.InsertFirstClaims
-- is set. Parameters as claim.sql: $1 scope, $2 key, $3 fingerprint,
-- $4 owner, $5 lease µs, $6 retention µs, $7 lock_timeout (the caller
-- sends 1ms, not Config.LockTimeout: see below).
--
-- The plain INSERT … ON CONFLICT DO NOTHING of a hand-written idempotency
-- table: it returns one row when it inserted the claim, and none when the
-- key has a row. Then the caller sends read_claim.sql, a plain read of
-- that row, and decides (a replay, an in-progress duplicate, a mismatch,
-- or the rare takeover, through takeover.sql): every answer but a first
-- execution costs two statements in two round trips, as the seed's
-- mechanism does, and a first execution costs what a plain insert costs,
-- without claim.sql's read, union and its insert's set-up on every run.
-- A conflict writes nothing, so a replay still takes no lock and writes
-- no WAL.
--
-- The row it writes is claim.sql's (same columns, same expiry: at least
-- the lease). c reads the clock once and sets lock_timeout local to the
-- statement's transaction before the insert runs, as in claim.sql. The
-- insert waits whenever a transaction not yet ended inserted, updated or
-- deleted the key's row, also when the row's committed version answers
-- the claim (a reconciler's transaction that leased a held record), so the
-- caller gives it 1ms and, past that, sends claim.sql, which reads the
-- committed version without waiting and waits Config.LockTimeout only when
-- it must (a DoTx's uncommitted claim, a takeover).
INSERT INTO {table} (scope, key, fingerprint, state, owner, lease_until, expires_at, claimed_at)
SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
	c.now + $5::bigint * interval '1 microsecond',
	c.now + greatest($5::bigint, $6::bigint) * interval '1 microsecond',
	c.now
FROM (SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout) c
ON CONFLICT (scope, key) DO NOTHING
RETURNING true
