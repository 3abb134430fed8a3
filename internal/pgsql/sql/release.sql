-- Release: $1 scope, $2 key, $3 owner. Ends a live pending row of the
-- owner (its lease may have lapsed as long as nobody took it over), in
-- one statement: d deletes it when it has no checkpoints (steps NULL);
-- otherwise u keeps it with its lease ended (lease_until = now), so that
-- the next claim takes it over with its checkpoints. u runs only when d
-- deleted nothing (a one-time filter: after a delete it scans nothing) and
-- has no condition on steps: at READ COMMITTED, when a checkpoint of the
-- row committed after the statement's snapshot, d's re-check of the row's
-- newest version finds steps set and deletes nothing, and u keeps the row;
-- a row with checkpoints is never deleted. Each write's RETURNING calls
-- {notify}, which wakes the key's waiters as in complete.sql. Returns a
-- row only when it applied.
WITH d AS (
	DELETE FROM {table}
	WHERE scope = $1::text AND key = $2::text
		AND state = 1 AND owner = $3::text AND expires_at > clock_timestamp()
		AND steps IS NULL
	RETURNING {notify} AS done
), u AS (
	UPDATE {table} SET
		lease_until = clock_timestamp()
	WHERE NOT EXISTS (SELECT 1 FROM d)
		AND scope = $1::text AND key = $2::text
		AND state = 1 AND owner = $3::text AND expires_at > clock_timestamp()
	RETURNING {notify} AS done
)
SELECT done FROM d
UNION ALL
SELECT done FROM u
