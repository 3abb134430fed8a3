package postgres

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
	"github.com/stagedoor/once/internal/pgsql"
)

// statements holds the SQL of every operation, rendered for one table
// (internal/pgsql is their one home, documented there), and the
// lock_timeout that Claim and Resolve set for themselves (a string, boxed
// once here rather than on every claim).
type statements struct {
	pgsql.Statements
	lockTimeout any
}

func newStatements(table string, lockTimeout time.Duration) statements {
	return statements{Statements: pgsql.Render(table), lockTimeout: lockTimeoutSetting(lockTimeout)}
}

// The fenced writes. Each is one statement conditional on the owner token
// of a live pending row. Complete, Renew and Checkpoint answer by their
// command tag, which counts the row they updated (wroteRow; Complete's
// RETURNING, its waiter check, is discarded); Release returns a row only
// when it applied.

func (q statements) complete(ctx context.Context, db querier, p backends.CompleteParams) (bool, error) {
	if err := checkInput("complete", p.Scope, p.Key, nil, p.Owner); err != nil {
		return false, err
	}
	a := newCompleteArgs(p)
	return wroteRow(ctx, db, "complete", q.Complete, a.args[:])
}

func (q statements) renew(ctx context.Context, db querier, p backends.RenewParams) (bool, error) {
	if err := checkInput("renew", p.Scope, p.Key, nil, p.Owner); err != nil {
		return false, err
	}
	return wroteRow(ctx, db, "renew", q.Renew, []any{p.Scope, p.Key, p.Owner, sqlstore.Micros(p.Lease)})
}

func (q statements) checkpoint(ctx context.Context, db querier, p backends.CheckpointParams) (bool, error) {
	if err := checkInput("checkpoint", p.Scope, p.Key, nil, p.Owner); err != nil {
		return false, err
	}
	var steps []byte // NULL: an empty p.Steps stores none
	if len(p.Steps) > 0 {
		steps = p.Steps
	}
	return wroteRow(ctx, db, "checkpoint", q.Checkpoint, []any{p.Scope, p.Key, p.Owner, steps})
}

func (q statements) release(ctx context.Context, db querier, p backends.ReleaseParams) (bool, error) {
	if err := checkInput("release", p.Scope, p.Key, nil, p.Owner); err != nil {
		return false, err
	}
	var ok bool
	return interpretError("release", db.QueryRow(ctx, q.Release,
		p.Scope, p.Key, p.Owner).Scan(&ok))
}
