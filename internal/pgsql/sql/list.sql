-- List: $1 state (1 pending, 2 completed, 3 held), $2 older-than µs, $3 scope ('' for
-- every scope), $4 key prefix, $5 and $6 the cursor (the last scope and
-- key returned; '' and '' to start), $7 page size.
--
-- The age column may be negative (a row stamped by a clock ahead of this
-- one); the Go side clamps it at 0, and a zero (or negative) $2 selects
-- such rows too, as their Age is then 0.
--
-- Pending and completed records: walks the primary key in (scope, key)
-- order from the cursor, reading every row until a page is full — those
-- rows have no index of their own (one would cost every claim and
-- completion). Held records use list_held.sql and its partial index
-- instead.
SELECT r.scope, r.key, r.state, r.fingerprint,
	coalesce((extract(epoch FROM r.lease_until - c.now) * 1000000)::bigint, 0),
	(extract(epoch FROM r.expires_at - c.now) * 1000000)::bigint,
	coalesce((extract(epoch FROM c.now - coalesce(r.held_at, r.claimed_at)) * 1000000)::bigint, 0),
	coalesce((extract(epoch FROM r.hold_until - c.now) * 1000000)::bigint, 0),
	coalesce(r.held_code, ''), coalesce(r.held_message, '')
FROM {table} r, (SELECT clock_timestamp() AS now) c
WHERE r.state = $1::smallint AND r.expires_at > c.now
	AND ($2::bigint <= 0 OR coalesce(r.claimed_at, '-infinity') <= c.now - $2::bigint * interval '1 microsecond')
	AND ($3::text = '' OR r.scope = $3::text)
	AND starts_with(r.key, $4::text)
	AND (r.scope, r.key) > ($5::text, $6::text)
ORDER BY r.scope, r.key
LIMIT $7::int
