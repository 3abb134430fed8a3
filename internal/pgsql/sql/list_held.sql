-- ListHeld: parameters as list.sql ($1 is ignored: held rows only).
--
-- Reads the partial index on held_at (held rows only, so its size is the
-- number of held keys, and the hot path — claims, completions, replays —
-- never writes it), then sorts the matches by (scope, key) for the
-- cursor.
SELECT r.scope, r.key, r.state, r.fingerprint,
	coalesce((extract(epoch FROM r.lease_until - c.now) * 1000000)::bigint, 0),
	(extract(epoch FROM r.expires_at - c.now) * 1000000)::bigint,
	coalesce((extract(epoch FROM c.now - r.held_at) * 1000000)::bigint, 0),
	coalesce((extract(epoch FROM r.hold_until - c.now) * 1000000)::bigint, 0),
	coalesce(r.held_code, ''), coalesce(r.held_message, '')
FROM {table} r, (SELECT clock_timestamp() AS now) c
WHERE r.held_at IS NOT NULL
	AND ($2::bigint <= 0 OR r.held_at <= c.now - $2::bigint * interval '1 microsecond')
	AND $1::smallint = 3
	AND r.state = 3 AND r.expires_at > c.now
	AND ($3::text = '' OR r.scope = $3::text)
	AND starts_with(r.key, $4::text)
	AND (r.scope, r.key) > ($5::text, $6::text)
ORDER BY r.scope, r.key
LIMIT $7::int
