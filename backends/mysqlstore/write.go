package mysqlstore

import (
	"context"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// The fenced writes: each is one statement conditional on the owner token
// of a live pending row (Release two when the record has checkpoints);
// see statements.go.

func (r runner) complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	if err := checkInput("complete", p.Scope, p.Key, nil, p.Owner, true); err != nil {
		return false, err
	}
	n, err := r.exec(ctx, "complete", r.s.sql.complete,
		sqlstore.Micros(p.Retention), nonNil(p.Outcome), p.Scope, p.Key, p.Owner)
	if err != nil || n == 1 {
		return n == 1, err
	}
	// Nothing pending of ours: applied already (a re-send after a lost
	// reply), or lost to a takeover, a Resolve or expiry.
	var one int
	return r.queryRow(ctx, "complete", r.s.sql.completedBy, []any{&one},
		p.Scope, p.Key, p.Owner, nonNil(p.Outcome))
}

func (r runner) renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	if err := checkInput("renew", p.Scope, p.Key, nil, p.Owner, true); err != nil {
		return false, err
	}
	lease := sqlstore.Micros(p.Lease)
	n, err := r.exec(ctx, "renew", r.s.sql.renew, lease, lease, p.Scope, p.Key, p.Owner)
	return n == 1, err
}

func (r runner) checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	if err := checkInput("checkpoint", p.Scope, p.Key, nil, p.Owner, true); err != nil {
		return false, err
	}
	var steps any // NULL: no checkpoints
	if len(p.Steps) > 0 {
		steps = p.Steps
	}
	n, err := r.exec(ctx, "checkpoint", r.s.sql.checkpoint, steps, p.Scope, p.Key, p.Owner)
	return n == 1, err
}

// release deletes the owner's record when it has no checkpoints; when it
// deleted nothing (the record has checkpoints, or is not the owner's), a
// second statement ends the lease of the owner's record with checkpoints.
// Between the two only the owner could change the checkpoints, and the
// owner is the one releasing; any other change the second statement's
// fence sees.
func (r runner) release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	if err := checkInput("release", p.Scope, p.Key, nil, p.Owner, true); err != nil {
		return false, err
	}
	n, err := r.exec(ctx, "release", r.s.sql.release, p.Scope, p.Key, p.Owner)
	if err != nil || n == 1 {
		return n == 1, err
	}
	n, err = r.exec(ctx, "release", r.s.sql.endLease, p.Scope, p.Key, p.Owner)
	return n == 1, err
}
