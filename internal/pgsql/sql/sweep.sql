-- Sweep: $1 batch size. One batch of the sweeper.
--
-- cand takes at most $1 rows whose sweep_after has passed, in index order,
-- locking them with SKIP LOCKED: it never waits for (nor blocks) a claim
-- or a completion holding a row. Of those, del deletes the expired ones
-- (by ctid, a TID scan) and bump moves sweep_after of the live ones (a
-- record completed or resolved after its claim-time estimate) to their
-- expiry, so the next batches do not visit them again. Returns how many
-- rows it deleted and how many candidates it looked at.
WITH cand AS (
	SELECT ctid, expires_at <= clock_timestamp() AS dead
	FROM {table}
	WHERE sweep_after <= clock_timestamp()
	ORDER BY sweep_after
	LIMIT $1::int
	FOR UPDATE SKIP LOCKED
), del AS (
	DELETE FROM {table}
	WHERE ctid = ANY (ARRAY (SELECT ctid FROM cand WHERE dead))
	RETURNING 1
), bump AS (
	UPDATE {table} r SET sweep_after = r.expires_at
	WHERE r.ctid = ANY (ARRAY (SELECT ctid FROM cand WHERE NOT dead))
	RETURNING 1
)
SELECT (SELECT count(*) FROM del), (SELECT count(*) FROM cand)
