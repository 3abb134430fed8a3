-- Hold: $1 scope, $2 key, $3 owner, $4 hold µs, $5 code, $6 message,
-- $7 retention µs, $8 the key's notification slot (pgsql.Slot, computed
-- by the client).
--
-- Fenced by the owner token of a live pending row, which becomes held
-- (state 3): held_at and lease_until (no reconciler lease yet) now,
-- hold_until now + hold, living at least until the hold ends. The row
-- enters the held index (held_at); the hot path never writes held_at. A
-- row already held by this owner (a re-send) reports true unchanged.
--
-- {notify:$8} wakes the key's waiters when the row changed (a re-send
-- changes nothing and notifies nobody) and somebody listens, as in
-- complete.sql; a data-modifying CTE runs to completion, so the RETURNING
-- is evaluated even though EXISTS reads only its first row.
WITH c AS (
	SELECT clock_timestamp() AS now
), upd AS (
	UPDATE {table} r SET
		state = 3,
		lease_until = c.now,
		held_at = c.now,
		hold_until = c.now + $4::bigint * interval '1 microsecond',
		held_code = $5::text,
		held_message = $6::text,
		expires_at = c.now + greatest($4::bigint, $7::bigint) * interval '1 microsecond'
	FROM c
	WHERE r.scope = $1::text AND r.key = $2::text
		AND r.state = 1 AND r.owner = $3::text AND r.expires_at > c.now
	RETURNING {notify:$8}
)
SELECT EXISTS (SELECT 1 FROM upd) OR EXISTS (
	SELECT 1 FROM {table} r, c
	WHERE r.scope = $1::text AND r.key = $2::text
		AND r.state = 3 AND r.owner = $3::text AND r.expires_at > c.now)
