package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

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
// of a live pending row. Renew and Checkpoint return no row: their command
// tag counts the row they updated (wroteRow). Complete and Release return
// a row only when they applied (Complete's holds its waiter check, which
// must run after the row is locked).

func (q statements) complete(ctx context.Context, db querier, p backends.CompleteParams) (bool, error) {
	if err := checkInput("complete", p.Scope, p.Key, nil, p.Owner); err != nil {
		return false, err
	}
	a := newCompleteArgs(p)
	return interpretError("complete", db.QueryRow(ctx, q.Complete, a.args[:]...).Scan(a.dest[:]...))
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

// boolScan is a one-column boolean row: complete.sql's. It implements
// pgx.RowScanner: it decodes the binary boolean itself (without the
// allocations of pgx's scan of a *bool, or of Exec, which copies the row
// it discards), and lets pgx scan any other form (the text column of the
// simple protocol).
type boolScan bool

// ScanRow implements pgx.RowScanner.
func (s *boolScan) ScanRow(rows pgx.Rows) error {
	fields, values := rows.FieldDescriptions(), rows.RawValues()
	if len(values) != 1 || len(fields) != 1 {
		return fmt.Errorf("row has %d columns, want 1", len(values))
	}
	if fields[0].Format != pgx.BinaryFormatCode || fields[0].DataTypeOID != pgtype.BoolOID {
		return rows.Scan((*bool)(s))
	}
	if len(values[0]) != 1 {
		return errors.New("bad boolean column")
	}
	*s = values[0][0] != 0
	return nil
}
