-- ReadClaim: a claim's read: $1 scope, $2 key, $3 owner (the claim's
-- token). The Store sends it first while most of its recent claims met a
-- row (then insert_claim.sql when it returns none), and after
-- insert_claim.sql otherwise, when that inserted nothing.
--
-- A plain read of the row by primary key, as of the statement's snapshot,
-- without locking it or writing anything: on a replay, an in-progress and
-- a mismatch it is all the claim costs the server, what the raw
-- baseline's read costs. It returns the row as stored, with owner = $3 and
-- the server's clock: the caller decides from the timestamps whether the
-- row is live, its lease lapsed, how long its lease and retention have
-- left and how long ago a pending row was claimed (claimed_at) (in Go: no
-- numeric arithmetic on the server, whose extract(epoch …) costs more than
-- the read).
--
-- The last column is the row's checkpoints (steps) only when the row is
-- this very owner's pending claim (a re-send after a lost reply, whose
-- answer carries them); NULL otherwise, so that a replay, an in-progress
-- and a mismatch never send, or detoast, the blob.
--
-- It never takes a record over: when the row had expired, or was pending
-- with a lapsed lease (or held, its hold and reconciler lease ended) and a
-- matching fingerprint, or when there is none after insert_claim.sql
-- conflicted (deleted in between), the caller sends takeover.sql, which
-- decides those rare cases.
SELECT r.state, r.fingerprint, r.outcome, coalesce(r.owner = $3::text, false),
	r.lease_until, r.expires_at, r.hold_until, clock_timestamp(), r.claimed_at,
	CASE WHEN r.state = 1 AND r.owner = $3::text THEN r.steps END
FROM {table} r
WHERE r.scope = $1::text AND r.key = $2::text
