package mysqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// lockTimeoutHint is the LeaseRemaining reported when a Claim or Resolve
// gave up waiting for a concurrent uncommitted claim: the core answers
// ErrInProgress with it as the retry-after hint.
const lockTimeoutHint = time.Second

// procRow is the row the claim and resolve procedures return, and the
// columns every read of a record scans. State 0 means the wait for a
// concurrent uncommitted claim timed out.
type procRow struct {
	done     bool // claimed, or resolved
	tookOver bool
	state    int64
	fp       []byte
	outcome  []byte
	leaseUS  sql.NullInt64
	// steps is a claim's checkpoints (claimed on a takeover or a
	// re-send), or the record's (Admin.Get); nil for none.
	steps []byte
	// The detail columns (see detailColumns), all on the server's clock.
	expireUS, ageUS, holdUS int64
	code, message           []byte
}

// withDetails returns the scan destinations dest followed by those of the
// detail columns, in order. Its slice has a constant capacity (room for
// the longest row, peek's), so that inlined the compiler keeps it on
// the stack instead of growing it on the heap on every claim.
func (r *procRow) withDetails(dest ...any) []any {
	return append(append(make([]any, 0, 13), dest...), &r.expireUS, &r.ageUS, &r.holdUS, &r.code, &r.message)
}

// lapsed reports whether a live row read by peek may be taken over by a
// matching claim: pending with a lapsed lease, or held with its hold and
// any reconciler's lease ended.
func (r procRow) lapsed() bool {
	return r.leaseUS.Int64 <= 0 && (r.state == int64(backends.StatePending) ||
		r.state == int64(backends.StateHeld) && r.holdUS <= 0)
}

// existing builds the backends.Record of a live row the procedure
// reported, or of the uncommitted claim it waited for in vain (state 0),
// whose fingerprint it cannot see: given stands for it.
func (r procRow) existing(given []byte) backends.Record {
	if r.state == 0 {
		// A copy: the Record is the caller's, given is the caller's too.
		return backends.Record{State: backends.StatePending, Fingerprint: bytes.Clone(given), LeaseRemaining: lockTimeoutHint}
	}
	rec := backends.Record{State: backends.State(r.state), Fingerprint: r.fp}
	if len(rec.Fingerprint) == 0 {
		rec.Fingerprint = nil
	}
	switch rec.State {
	case backends.StatePending:
		rec.LeaseRemaining = sqlstore.FromMicros(r.leaseUS.Int64)
		rec.Age = ageFromMicros(r.ageUS)
	case backends.StateHeld:
		rec.LeaseRemaining = sqlstore.FromMicros(r.leaseUS.Int64)
		rec.Age = ageFromMicros(r.ageUS)
		rec.Held = backends.HeldInfo{Remaining: sqlstore.FromMicros(r.holdUS), Code: string(r.code), Message: string(r.message)}
	default:
		rec.Outcome = r.outcome
		if rec.Outcome == nil {
			rec.Outcome = []byte{}
		}
		rec.ExpiresIn = sqlstore.FromMicros(r.expireUS)
	}
	return rec
}

func (r runner) claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if err := checkInput("claim", p.Scope, p.Key, p.Fingerprint, p.Owner, true); err != nil {
		return backends.ClaimResult{}, err
	}
	if r.tx == nil && !r.s.cfg.oneRoundTrip {
		return r.claimPlain(ctx, p)
	}
	var row procRow
	err := r.call(ctx, "claim", r.s.sql.claim,
		row.withDetails(&row.done, &row.tookOver, &row.steps, &row.state, &row.fp, &row.outcome, &row.leaseUS),
		p.Scope, p.Key, nonNil(p.Fingerprint), p.Owner, sqlstore.Micros(p.Lease), sqlstore.Micros(p.Retention), r.s.cfg.lockWaitS)
	if err != nil {
		return backends.ClaimResult{}, err
	}
	if row.done {
		return backends.ClaimResult{Claimed: true, TookOver: row.tookOver, Steps: noneEmpty(row.steps)}, nil
	}
	return backends.ClaimResult{Existing: row.existing(p.Fingerprint)}, nil
}

// noneEmpty returns b, or nil when b is empty: a stored blob of no bytes
// (which Checkpoint never writes) means no checkpoints, as NULL does.
func noneEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func (r runner) resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	if err := checkInput("resolve", p.Scope, p.Key, p.Fingerprint, p.Owner, false); err != nil {
		return backends.ResolveResult{}, err
	}
	var row procRow
	err := r.call(ctx, "resolve", r.s.sql.resolve,
		row.withDetails(&row.done, &row.state, &row.fp, &row.outcome, &row.leaseUS),
		p.Scope, p.Key, nonNil(p.Fingerprint), p.Owner, nonNil(p.Outcome), sqlstore.Micros(p.Retention), r.s.cfg.lockWaitS,
		p.OnlyLeased)
	if err != nil {
		return backends.ResolveResult{}, err
	}
	if row.done {
		return backends.ResolveResult{Resolved: true}, nil
	}
	if row.state == -1 {
		return backends.ResolveResult{}, nil // OnlyLeased: the key is absent
	}
	return backends.ResolveResult{Existing: row.existing(p.Fingerprint)}, nil
}
