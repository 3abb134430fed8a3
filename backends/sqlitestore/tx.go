package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/stagedoor/once/backends"
)

// Tx is a transaction begun by BeginTx: an *sql.Tx on the Store's writer
// whose Commit and Rollback take a context, as once.Tx's do, and give the
// writer back to the Store. The context is not used: an *sql.Tx ends with
// the context it was begun with, or with Commit or Rollback.
type Tx struct {
	*sql.Tx
	conn *sql.Conn
}

// Commit commits the transaction.
func (t Tx) Commit(context.Context) error {
	err := t.Tx.Commit()
	_ = t.conn.Close()
	return interpretError("commit", err)
}

// Rollback rolls the transaction back.
func (t Tx) Rollback(context.Context) error {
	err := t.Tx.Rollback()
	_ = t.conn.Close()
	return interpretError("rollback", err)
}

// BeginTx begins a transaction (BEGIN IMMEDIATE) on the Store's writer
// and returns it with the store bound to it: the begin that once.DoTx
// takes,
//
//	once.DoTx(ctx, scope, key, fp, store.BeginTx, fn)
//
// The Store has one writer, so until the transaction ends every other
// write of the Store waits for it — a concurrent duplicate's claim
// included, which then replays the committed outcome — and so does every
// other process's write to the file, for at most its busy timeout. A
// BeginTx waits at most Config.LockTimeout for the writer, then returns
// an *Error of Op "begin" ("writer busy"), never having begun.
func (s *Store) BeginTx(ctx context.Context) (Tx, backends.Store, error) {
	wctx, cancel := context.WithTimeout(ctx, s.lockTimeout)
	conn, err := s.writer.Conn(wctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return Tx{}, nil, &Error{Op: "begin", kind: "writer busy: another transaction of the Store holds it"}
		}
		return Tx{}, nil, interpretError("begin", err)
	}
	tx, err := conn.BeginTx(ctx, nil) // _txlock=immediate: BEGIN IMMEDIATE
	if err != nil {
		_ = conn.Close()
		return Tx{}, nil, interpretError("begin", err)
	}
	return Tx{Tx: tx, conn: conn}, txStore{s: s, h: on{reader: tx, writer: tx, tx: tx}}, nil
}

// txStore is a Store bound to one transaction: every statement runs in
// it, reads included, so that the transaction sees its own writes.
type txStore struct {
	s *Store
	h on
}

var (
	_ backends.Store       = txStore{}
	_ backends.Savepointer = txStore{}
)

func (t txStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return t.s.claim(ctx, t.h, p)
}

func (t txStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return t.s.complete(ctx, t.h, p)
}

func (t txStore) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return t.s.renew(ctx, t.h, p)
}

// Checkpoint implements backends.Store in one UPDATE inside the
// transaction: the checkpoints commit with the transaction's other writes,
// or not at all.
func (t txStore) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return t.s.checkpoint(ctx, t.h, p)
}

func (t txStore) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return t.s.release(ctx, t.h, p)
}

func (t txStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return t.s.resolve(ctx, t.h, p)
}

func (t txStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return t.s.hold(ctx, t.h, p)
}

func (t txStore) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return t.s.leaseHeld(ctx, t.h, p)
}

// Savepoint implements backends.Savepointer with a SAVEPOINT.
func (t txStore) Savepoint(ctx context.Context) error {
	_, err := t.h.tx.ExecContext(ctx, "SAVEPOINT once_handler")
	return interpretError("savepoint", err)
}

// RollbackToSavepoint implements backends.Savepointer with a ROLLBACK TO
// SAVEPOINT, which keeps the transaction open.
func (t txStore) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.h.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT once_handler")
	return interpretError("rollback to savepoint", err)
}
