package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/stagedoor/once/backends"
)

// row is a stored record as read.
type row struct {
	found      bool
	state      int64
	fp         []byte
	owner      sql.NullString
	resolved   bool
	leaseUntil sql.NullInt64
	outcome    []byte
	expiresAt  int64
	createdAt  int64
	// heldAt is set on a held row (a pending row whose owner gave up
	// without an outcome): then holdUntil, code and message describe the
	// hold, and leaseUntil and owner a reconciler's lease.
	heldAt, holdUntil sql.NullInt64
	code, message     string
	// steps is the row's checkpoints when the statement read them (see
	// readClaimSQL and getSQL), nil otherwise.
	steps []byte
}

// held reports whether the row is held.
func (r row) held() bool { return r.state == 1 && r.heldAt.Valid }

// leasedBy reports whether the row is held and owner (non-empty) leased
// it with LeaseHeld: Hold sets no lease (lease_until = held_at), every
// LeaseHeld one that ends after the hold started.
func (r row) leasedBy(owner string) bool {
	return r.held() && owner != "" && r.owner.Valid && r.owner.String == owner && r.leaseUntil.Int64 > r.heldAt.Int64
}

// live reports whether the row exists and has not expired at now.
func (r row) live(now int64) bool { return r.found && r.expiresAt > now }

// pendingBy reports whether the row is a live claim of owner.
func (r row) pendingBy(owner string, now int64) bool {
	return r.live(now) && r.state == 1 && !r.held() && r.owner.Valid && r.owner.String == owner
}

// record is the backends.Record of a live row.
func (r row) record(now int64) backends.Record {
	rec := backends.Record{State: backends.State(r.state), Fingerprint: r.fp}
	if len(rec.Fingerprint) == 0 {
		rec.Fingerprint = nil
	}
	switch {
	case r.held():
		rec.State = backends.StateHeld
		rec.LeaseRemaining = remaining(now, r.leaseUntil.Int64)
		rec.Age = age(r.heldAt.Int64, now)
		rec.Held = backends.HeldInfo{Remaining: remaining(now, r.holdUntil.Int64), Code: r.code, Message: r.message}
	case rec.State == backends.StatePending:
		rec.LeaseRemaining = remaining(now, r.leaseUntil.Int64)
		rec.Age = age(r.createdAt, now)
	default:
		rec.Outcome = r.outcome
		if rec.Outcome == nil {
			rec.Outcome = []byte{}
		}
		rec.ExpiresIn = remaining(now, r.expiresAt) // positive: r is live at now
	}
	return rec
}

// querier is a pool or a transaction.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// on is where the statements of one operation run: the Store's reader
// and writer pools, or, on a store bound to a transaction (BeginTx), that
// transaction for both.
type on struct {
	reader, writer querier
	tx             *sql.Tx
}

// pool is the Store's own pools.
func (s *Store) pool() on { return on{reader: s.reader, writer: s.writer} }

// read reads the row of (scope, key) with readSQL, without its
// checkpoints.
func (s *Store) read(ctx context.Context, q querier, op, scope, key string) (row, error) {
	return s.readWith(ctx, q, op, s.sql.read, scope, key)
}

// readWith reads the row with query: readSQL, readClaimSQL or getSQL,
// whose arguments start with scope and key.
func (s *Store) readWith(ctx context.Context, q querier, op, query string, args ...any) (row, error) {
	var r row
	err := q.QueryRowContext(ctx, query, args...).
		Scan(append(r.dest(), &r.steps)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return row{}, nil
	case err != nil:
		return row{}, interpretError(op, err)
	}
	r.found = true
	if len(r.steps) == 0 {
		r.steps = nil // none: Checkpoint stores no empty blob
	}
	return r, nil
}

// dest is what readSQL's columns scan into.
func (r *row) dest() []any {
	return []any{&r.state, &r.fp, &r.owner, &r.resolved, &r.leaseUntil, &r.outcome, &r.expiresAt,
		&r.createdAt, &r.heldAt, &r.holdUntil, &r.code, &r.message}
}

// writeIn is writeTx on h: on a store bound to a transaction (h.tx),
// which holds the write lock already, fn runs in that transaction.
func (s *Store) writeIn(ctx context.Context, h on, op string, fn func(tx querier) error) error {
	if h.tx != nil {
		return interpretError(op, fn(h.tx))
	}
	return s.writeTx(ctx, op, func(tx *sql.Tx) error { return fn(tx) })
}

// writeTx runs fn in a BEGIN IMMEDIATE transaction on the writer: fn reads
// the row again under the write lock, decides and writes, and its result
// stands once the transaction commits.
func (s *Store) writeTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil) // _txlock=immediate: BEGIN IMMEDIATE
	if err != nil {
		return interpretError(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return interpretError(op, err)
	}
	return interpretError(op, tx.Commit())
}

// affected returns the rows an Exec changed.
func affected(op string, res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, interpretError(op, err)
	}
	n, err := res.RowsAffected()
	return n, interpretError(op, err)
}
