package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends"
)

// resolveSQL is the single statement behind Resolve, built like claimSQL.
// Parameters: $1 scope, $2 key, $3 fingerprint, $4 outcome, $5 retention
// in microseconds, $6 the Resolve's owner token (” for none), $7 the
// statement's lock_timeout.
//
// ins stores the outcome when e saw no row; upd when e saw an expired row,
// or a live pending row (whoever owns it) with a matching fingerprint
// (either side empty matches). A live completed row is never touched; one
// completed by this very owner token with this outcome (a repeated
// Resolve) reports resolved, again without a write. A pending row
// resolved without a fingerprint keeps its own.
const resolveSQL = `WITH c AS (
	SELECT clock_timestamp() AS now, set_config('lock_timeout', $7::text, true) AS lock_timeout
), e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at
	FROM %[1]s r
	WHERE r.scope = $1::text AND r.key = $2::text
), ins AS (
	INSERT INTO %[1]s (scope, key, fingerprint, state, owner, outcome, created_at, completed_at, expires_at)
	SELECT $1::text, $2::text, $3::bytea, 2, nullif($6::text, ''), $4::bytea, c.now, c.now,
		c.now + $5::bigint * interval '1 microsecond'
	FROM c
	WHERE NOT EXISTS (SELECT 1 FROM e)
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true AS done
), t AS (
	SELECT e.state, e.fingerprint, e.owner, e.lease_until, e.expires_at, e.expires_at <= c.now AS expired, c.now
	FROM e, c
	WHERE e.expires_at <= c.now
		OR (e.state = 1 AND (octet_length($3::bytea) = 0 OR octet_length(e.fingerprint) = 0 OR e.fingerprint = $3::bytea))
), upd AS (
	UPDATE %[1]s r SET
		fingerprint = CASE WHEN t.expired OR octet_length($3::bytea) > 0
			THEN $3::bytea ELSE t.fingerprint END,
		state = 2,
		owner = nullif($6::text, ''),
		lease_until = NULL,
		outcome = $4::bytea,
		created_at = CASE WHEN t.expired THEN t.now ELSE r.created_at END,
		completed_at = t.now,
		expires_at = t.now + $5::bigint * interval '1 microsecond'
	FROM t
	WHERE EXISTS (SELECT 1 FROM t)
		AND r.scope = $1::text AND r.key = $2::text
		AND r.state = t.state
		AND r.expires_at = t.expires_at
		AND r.owner IS NOT DISTINCT FROM t.owner
		AND r.lease_until IS NOT DISTINCT FROM t.lease_until
	RETURNING true AS done
)
SELECT
	EXISTS (SELECT 1 FROM ins) OR EXISTS (SELECT 1 FROM upd)
		OR coalesce(e.state = 2 AND e.expires_at > c.now AND e.owner = nullif($6::text, '') AND e.outcome = $4::bytea, false),
	e.state IS NOT NULL,
	coalesce(e.expires_at > c.now, false),
	coalesce(e.state, 0),
	e.fingerprint,
	e.outcome,
	coalesce((extract(epoch FROM e.lease_until - c.now) * 1000000)::bigint, 0)
FROM c LEFT JOIN e ON true`

// resolveRow is the single row resolveSQL returns.
type resolveRow struct {
	resolved bool
	found    bool
	live     bool
	state    int16
	fp       []byte
	outcome  []byte
	leaseUS  int64
}

// decide turns a resolveRow into a result, or reports that the statement
// must run again because it lost a race with a concurrent commit.
func (r resolveRow) decide(given []byte) (res backends.ResolveResult, retry bool) {
	switch {
	case r.resolved:
		return backends.ResolveResult{Resolved: true}, false
	case !r.found || !r.live:
		return backends.ResolveResult{}, true
	}
	rec := existing(r.state, r.fp, r.outcome, r.leaseUS)
	if rec.State == backends.StatePending && backends.FingerprintMatches(r.fp, given) {
		return backends.ResolveResult{}, true
	}
	return backends.ResolveResult{Existing: rec}, false
}

func (q statements) resolveArgs(p backends.ResolveParams) []any {
	return []any{p.Scope, p.Key, nonNil(p.Fingerprint), nonNil(p.Outcome), micros(p.Retention), p.Owner, q.lockTimeout}
}

func (r *resolveRow) scan(row pgx.Row) error {
	return row.Scan(&r.resolved, &r.found, &r.live, &r.state, &r.fp, &r.outcome, &r.leaseUS)
}

func (q statements) resolveOnce(ctx context.Context, db querier, p backends.ResolveParams) (resolveRow, error) {
	var r resolveRow
	if _, err := interpretError("resolve", r.scan(db.QueryRow(ctx, q.resolveSQL, q.resolveArgs(p)...))); err != nil {
		return resolveRow{}, err
	}
	return r, nil
}

// resolveLoop runs one resolve attempt, and again (boundedly) when it lost
// a race with a concurrent commit of the same key.
// A resolve that gave up waiting for a concurrent uncommitted transaction
// reports the key pending, as Claim does.
func resolveLoop(ctx context.Context, p backends.ResolveParams, attempt func(context.Context) (resolveRow, error)) (backends.ResolveResult, error) {
	res, err := raceLoop(ctx, "resolve", attempt, func(r resolveRow) (backends.ResolveResult, bool) { return r.decide(p.Fingerprint) })
	if code(err) == CodeLockNotAvailable {
		return backends.ResolveResult{Existing: heldByTx(p.Fingerprint)}, nil
	}
	return res, err
}
