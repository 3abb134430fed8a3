package postgres

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends"
)

// claimSQL is the single statement behind Claim. Parameters: $1 scope,
// $2 key, $3 fingerprint, $4 owner, $5 lease and $6 retention in
// microseconds.
//
// The CTE e reads the row as of the statement's snapshot, without locking
// it. Then at most one of two writes acts:
//
//   - ins inserts the claim when e saw no row. ON CONFLICT DO NOTHING covers
//     a row committed after the snapshot: the insert does nothing and the
//     caller runs the statement again with a fresh snapshot.
//   - upd replaces the row when e saw it expired, or pending with an expired
//     lease and a matching fingerprint (the CTE t). It is conditioned on the
//     exact row e observed (state, owner, lease, expiry), so of two
//     concurrent takeovers only one applies; the other finds the row changed
//     and is re-run.
//
// A live completed row, or a live lease, satisfies neither write: the
// statement then only reads, takes no row lock and writes nothing. The
// uncorrelated EXISTS becomes a one-time filter, so upd does not even scan
// the index on that path.
const claimSQL = `WITH c AS (
	SELECT clock_timestamp() AS now
), e AS (
	SELECT r.state, r.fingerprint, r.owner, r.lease_until, r.outcome, r.expires_at
	FROM %[1]s r
	WHERE r.scope = $1::text AND r.key = $2::text
), ins AS (
	INSERT INTO %[1]s (scope, key, fingerprint, state, owner, lease_until, created_at, expires_at)
	SELECT $1::text, $2::text, $3::bytea, 1, $4::text,
		c.now + $5::bigint * interval '1 microsecond',
		c.now,
		c.now + $6::bigint * interval '1 microsecond'
	FROM c
	WHERE NOT EXISTS (SELECT 1 FROM e)
	ON CONFLICT (scope, key) DO NOTHING
	RETURNING true AS done
), t AS (
	SELECT e.state, e.owner, e.lease_until, e.expires_at, e.expires_at > c.now AS took_over, c.now
	FROM e, c
	WHERE e.expires_at <= c.now
		OR (e.state = 1 AND e.lease_until <= c.now
			AND (octet_length($3::bytea) = 0 OR e.fingerprint = $3::bytea))
), upd AS (
	UPDATE %[1]s r SET
		fingerprint = $3::bytea,
		state = 1,
		owner = $4::text,
		lease_until = t.now + $5::bigint * interval '1 microsecond',
		outcome = NULL,
		created_at = t.now,
		completed_at = NULL,
		expires_at = t.now + $6::bigint * interval '1 microsecond'
	FROM t
	WHERE EXISTS (SELECT 1 FROM t)
		AND r.scope = $1::text AND r.key = $2::text
		AND r.state = t.state
		AND r.expires_at = t.expires_at
		AND r.owner IS NOT DISTINCT FROM t.owner
		AND r.lease_until IS NOT DISTINCT FROM t.lease_until
	RETURNING t.took_over
)
SELECT
	EXISTS (SELECT 1 FROM ins),
	(SELECT took_over FROM upd),
	e.state IS NOT NULL,
	coalesce(e.expires_at > c.now, false),
	coalesce(e.state, 0),
	e.fingerprint,
	e.outcome,
	coalesce((extract(epoch FROM e.lease_until - c.now) * 1000000)::bigint, 0)
FROM c LEFT JOIN e ON true`

// maxAttempts bounds the re-runs of Claim and Resolve when a concurrent
// session commits the same key between the statement's snapshot and its
// insert. Each re-run takes a fresh snapshot, so the second attempt sees
// the row unless yet another change lands in between.
const maxAttempts = 4

// claimRow is the single row claimSQL returns.
type claimRow struct {
	inserted bool
	tookOver *bool // nil when upd did nothing
	found    bool  // e saw a row
	live     bool  // that row had not expired
	state    int16
	fp       []byte
	outcome  []byte
	leaseUS  int64
}

// decide turns a claimRow into a result, or reports that the statement
// must run again (retry) because it lost a race with a concurrent commit.
func (r claimRow) decide(given []byte) (res backends.ClaimResult, retry bool) {
	switch {
	case r.inserted:
		return backends.ClaimResult{Claimed: true}, false
	case r.tookOver != nil:
		return backends.ClaimResult{Claimed: true, TookOver: *r.tookOver}, false
	case !r.found || !r.live:
		// Nothing visible (or only an expired row), yet no write applied:
		// the key was written after our snapshot.
		return backends.ClaimResult{}, true
	}
	rec := existing(r.state, r.fp, r.outcome, r.leaseUS)
	if rec.State == backends.StatePending && rec.LeaseRemaining <= 0 && backends.FingerprintMatches(r.fp, given) {
		// Eligible for takeover, yet upd did not apply: the row changed
		// after our snapshot.
		return backends.ClaimResult{}, true
	}
	return backends.ClaimResult{Existing: rec}, false
}

// existing builds the backends.Record of a live row.
func existing(state int16, fp, outcome []byte, leaseUS int64) backends.Record {
	rec := backends.Record{State: backends.State(state), Fingerprint: fp}
	if len(rec.Fingerprint) == 0 {
		rec.Fingerprint = nil
	}
	if rec.State == backends.StatePending {
		rec.LeaseRemaining = time.Duration(leaseUS) * time.Microsecond
	} else {
		rec.Outcome = outcome
		if rec.Outcome == nil {
			rec.Outcome = []byte{}
		}
	}
	return rec
}

func (q statements) claimOnce(ctx context.Context, db querier, p backends.ClaimParams) (claimRow, error) {
	var r claimRow
	err := db.QueryRow(ctx, q.claimSQL,
		p.Scope, p.Key, nonNil(p.Fingerprint), p.Owner, micros(p.Lease), micros(p.Retention),
	).Scan(&r.inserted, &r.tookOver, &r.found, &r.live, &r.state, &r.fp, &r.outcome, &r.leaseUS)
	if _, err := interpretError("claim", err); err != nil {
		return claimRow{}, err
	}
	return r, nil
}

// claimLoop runs one claim attempt, and again (boundedly) when it lost a
// race with a concurrent commit of the same key.
func claimLoop(ctx context.Context, p backends.ClaimParams, attempt func(context.Context) (claimRow, error)) (backends.ClaimResult, error) {
	return raceLoop(ctx, "claim", attempt, func(r claimRow) (backends.ClaimResult, bool) { return r.decide(p.Fingerprint) })
}

// raceLoop runs attempt until decide accepts its row, at most maxAttempts
// times: each re-run takes a fresh snapshot after losing a race with a
// concurrent commit of the same key.
func raceLoop[Row, Result any](ctx context.Context, op string, attempt func(context.Context) (Row, error), decide func(Row) (Result, bool)) (Result, error) {
	var zero Result
	for range maxAttempts {
		row, err := attempt(ctx)
		if err != nil {
			return zero, err
		}
		if res, retry := decide(row); !retry {
			return res, nil
		}
	}
	return zero, errContention(op)
}
