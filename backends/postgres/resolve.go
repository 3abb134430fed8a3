package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// resolveRow is the single row resolveSQL returns.
type resolveRow struct {
	resolved bool
	found    bool
	live     bool
	state    int16
	fp       []byte
	outcome  []byte
	leaseUS  int64
	ageUS    int64 // since claimed_at; 0 when NULL (not pending)
	leased   bool  // a live held row the Resolve's token leased
}

// decide turns a resolveRow into a result, or reports that the statement
// must run again because it lost a race with a concurrent commit.
// onlyLeased is the call's OnlyLeased: an absent key, and any row but a
// held one the token leased, is then an answer.
func (r resolveRow) decide(given []byte, onlyLeased bool) (res backends.ResolveResult, retry bool) {
	switch {
	case r.resolved:
		return backends.ResolveResult{Resolved: true}, false
	case onlyLeased && (!r.found || !r.live):
		return backends.ResolveResult{}, false // the next intent's key
	case !r.found || !r.live:
		return backends.ResolveResult{}, true
	}
	rec := existing(r.state, r.fp, r.outcome, sqlstore.FromMicros(r.leaseUS))
	if onlyLeased {
		if r.leased && backends.FingerprintMatches(r.fp, given) {
			return backends.ResolveResult{}, true // the row changed after the read
		}
		if rec.State == backends.StatePending {
			rec.Age = max(sqlstore.FromMicros(r.ageUS), 0)
		}
		return backends.ResolveResult{Existing: rec}, false
	}
	if backends.FingerprintMatches(r.fp, given) &&
		(rec.State == backends.StatePending || rec.State == backends.StateHeld) && rec.LeaseRemaining <= 0 {
		return backends.ResolveResult{}, true
	}
	if rec.State == backends.StatePending {
		rec.Age = max(sqlstore.FromMicros(r.ageUS), 0)
	}
	return backends.ResolveResult{Existing: rec}, false
}

func (q statements) resolveArgs(p backends.ResolveParams) []any {
	return []any{p.Scope, p.Key, nonNil(p.Fingerprint), nonNil(p.Outcome), sqlstore.Micros(p.Retention), p.Owner, q.lockTimeout, p.OnlyLeased}
}

func (r *resolveRow) scan(row pgx.Row) error {
	return row.Scan(&r.resolved, &r.found, &r.live, &r.state, &r.fp, &r.outcome, &r.leaseUS, &r.ageUS, &r.leased)
}

func (q statements) resolveOnce(ctx context.Context, db querier, p backends.ResolveParams) (resolveRow, error) {
	var r resolveRow
	if _, err := interpretError("resolve", r.scan(db.QueryRow(ctx, q.Resolve, q.resolveArgs(p)...))); err != nil {
		return resolveRow{}, err
	}
	return r, nil
}

// resolveLoop runs one resolve attempt, and again when it lost a race
// with a concurrent commit of the same key, at most maxAttempts times in
// all (raceLoop: errContention then).
// A resolve that gave up waiting for a concurrent uncommitted transaction
// reports the key pending, as Claim does.
func resolveLoop(ctx context.Context, p backends.ResolveParams, attempt func(context.Context) (resolveRow, error)) (backends.ResolveResult, error) {
	if err := checkInput("resolve", p.Scope, p.Key, p.Fingerprint, p.Owner); err != nil {
		return backends.ResolveResult{}, err
	}
	res, err := raceLoop(ctx, "resolve", attempt, func(r resolveRow) (backends.ResolveResult, bool) {
		return r.decide(p.Fingerprint, p.OnlyLeased)
	})
	if code(err) == CodeLockNotAvailable {
		return backends.ResolveResult{Existing: heldByTx(p.Fingerprint)}, nil
	}
	return res, err
}
