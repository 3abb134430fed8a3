-- ReadClaim: the second statement of a claim under Config.InsertFirstClaims,
-- sent when insert_claim.sql inserted nothing (the key has a row).
-- Parameters: $1 scope, $2 key, $3 owner (the claim's token).
--
-- A plain read of the row by primary key, without locking it or writing
-- anything, with claim.sql's answer columns (its second branch): the caller
-- decides from them as from claim.sql's (a replay, an in-progress
-- duplicate, a mismatch), and sends takeover.sql for the rare cases it
-- cannot answer, and when the row is gone (deleted after the insert's
-- conflict). It costs a replay what the raw baseline's read costs: like
-- claim.sql, it returns the row's checkpoints (steps) only to the row's
-- own pending owner (a re-send), NULL to everyone else.
SELECT r.state, r.fingerprint, r.outcome, coalesce(r.owner = $3::text, false),
	r.lease_until, r.expires_at, r.hold_until, clock_timestamp(), r.claimed_at,
	CASE WHEN r.state = 1 AND r.owner = $3::text THEN r.steps END
FROM {table} r
WHERE r.scope = $1::text AND r.key = $2::text
