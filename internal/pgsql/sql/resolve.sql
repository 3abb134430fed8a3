-- Resolve: $1 scope, $2 key, $3 fingerprint, $4 outcome, $5 retention µs,
-- $6 the Resolve's owner token ('' for none), $7 lock_timeout for the
-- statement, $8 only a held row leased by $6 (ResolveParams.OnlyLeased).
-- Built like takeover.sql.
--
-- ins stores the outcome when e saw no row; upd when e saw an expired row,
-- or a live pending row whose lease has lapsed (whoever owns it; upd
-- writes only the row version e read, so a claim committed after that
-- read is never written over) with a matching fingerprint
-- (either side empty matches), or a live held row with a matching
-- fingerprint unless another token's reconciler lease on it is live; a
-- resolved row leaves the held index. A live completed row is never touched; one
-- completed by this very owner token with this outcome (a repeated
-- Resolve after a lost reply) reports resolved, again without a write. A
-- pending row resolved without a fingerprint keeps its own. A resolved
-- pending or held row keeps its checkpoints (steps); a replaced expired
-- row drops them, as expiry does. Each write's
-- RETURNING calls {notify}, as in complete.sql, so the key's waiters wake
-- only when the statement wrote (a data-modifying CTE runs to completion
-- even where EXISTS reads only its first row). The last column is a
-- pending row's age, as in takeover.sql (0 when claimed_at is NULL).
-- With $8, ins never runs and upd writes only a live held row owned by
-- $6 (non-empty) that $6 leased (LeaseHeld sets a lease_until after
-- held_at; Hold sets it to held_at), with a matching fingerprint, the
-- version e read; the column after the age says whether e's row is such a
-- row, so that the caller tells a race lost (retry) from a refusal.
WITH c AS (
	SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout
), e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at, r.claimed_at, r.held_at
	FROM {table} r
	WHERE r.scope = $1::text AND r.key = $2::text
), ins AS (
	INSERT INTO {table} (scope, key, fingerprint, state, owner, outcome, expires_at)
	SELECT $1::text, $2::text, $3::bytea, 2, nullif($6::text, ''), $4::bytea,
		c.now + $5::bigint * interval '1 microsecond'
	FROM c
	WHERE NOT EXISTS (SELECT 1 FROM e) AND NOT $8::boolean
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING {notify} AS done
), t AS (
	SELECT e.state, e.fingerprint, e.owner, e.lease_until, e.expires_at, e.expires_at <= c.now AS expired, c.now
	FROM e, c
	WHERE (NOT $8::boolean AND (e.expires_at <= c.now
		OR (((e.state = 1 AND e.lease_until <= c.now) OR (e.state = 3 AND (e.lease_until <= c.now OR e.owner = nullif($6::text, ''))))
			AND (octet_length($3::bytea) = 0 OR octet_length(e.fingerprint) = 0 OR e.fingerprint = $3::bytea))))
		OR ($8::boolean AND e.expires_at > c.now AND e.state = 3 AND e.owner = nullif($6::text, '') AND e.lease_until > e.held_at
			AND (octet_length($3::bytea) = 0 OR octet_length(e.fingerprint) = 0 OR e.fingerprint = $3::bytea))
), upd AS (
	UPDATE {table} r SET
		fingerprint = CASE WHEN t.expired OR octet_length($3::bytea) > 0
			THEN $3::bytea ELSE t.fingerprint END,
		state = 2,
		owner = nullif($6::text, ''),
		lease_until = NULL,
		outcome = $4::bytea,
		expires_at = t.now + $5::bigint * interval '1 microsecond',
		held_at = NULL,
		hold_until = NULL,
		held_code = NULL,
		held_message = NULL,
		steps = CASE WHEN t.expired THEN NULL ELSE r.steps END
	FROM t
	WHERE EXISTS (SELECT 1 FROM t)
		AND r.scope = $1::text AND r.key = $2::text
		AND r.state = t.state
		AND r.expires_at = t.expires_at
		AND r.owner IS NOT DISTINCT FROM t.owner
		AND r.lease_until IS NOT DISTINCT FROM t.lease_until
	RETURNING {notify} AS done
)
SELECT
	EXISTS (SELECT 1 FROM ins) OR EXISTS (SELECT 1 FROM upd)
		OR coalesce(e.state = 2 AND e.expires_at > c.now
			AND e.owner = nullif($6::text, '') AND e.outcome = $4::bytea, false),
	e.state IS NOT NULL,
	coalesce(e.expires_at > c.now, false),
	coalesce(e.state, 0),
	e.fingerprint,
	e.outcome,
	coalesce((extract(epoch FROM e.lease_until - c.now) * 1000000)::bigint, 0),
	coalesce((extract(epoch FROM c.now - e.claimed_at) * 1000000)::bigint, 0),
	coalesce(e.state = 3 AND e.expires_at > c.now AND e.owner = nullif($6::text, '') AND e.lease_until > e.held_at, false)
FROM c LEFT JOIN e ON true
