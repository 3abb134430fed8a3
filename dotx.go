package once

import (
	"context"
	"errors"

	"github.com/stagedoor/once/backends"
)

// Tx is a database transaction that DoTx commits or rolls back. pgx.Tx
// implements it, and so do the Tx types of the database/sql stores
// (mysqlstore.Tx, sqlitestore.Tx), which wrap an *sql.Tx.
type Tx interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// txAttempts bounds the transactions of one DoTx call that the server
// rolls back before fn runs (backends.ErrTxRolledBack).
const txAttempts = 5

// DoTx is Do inside one database transaction: begin opens the transaction
// and returns it with the store bound to it — a SQL store's BeginTx method
// (postgres.Store.BeginTx, mysqlstore.Store.BeginTx,
// sqlitestore.Store.BeginTx) — and the claim, fn's writes through tx and
// the outcome commit together or not at all. A database effect made
// through tx therefore happens exactly once per (scope, key), with no
// lease to keep and no moment at which a crash leaves it done but
// unrecorded: a crash, a panic or a cancellation before the commit leaves
// neither the effect nor the claim, and the next call runs fn again.
// scope's name and policy apply; its store is replaced by the one begin
// returns, and no local cache is used.
//
// DoTx commits when fn ran and its value or final error was stored (fn's
// writes commit with it, so fn should not leave partial writes behind a
// final error), and when fn returned a held error (Hold): fn's writes are
// then undone back to a savepoint taken after the claim, and the key is
// committed held, on a context detached from ctx's cancellation, since a
// held error is typically fn giving up at ctx's deadline. In every other
// case — a replay, a retryable error, a panic, ErrInProgress,
// ErrKeyReused, a store failure — it rolls back, and returns what Do
// would; a panic is re-raised after the rollback. An outcome the store
// failed to record is rolled back with fn's writes: unlike Do's, the
// effect did not happen and the key can run fn again at once.
//
// If the commit fails, DoTx returns fn's value and error joined with an
// *UnrecordedError (ErrOutcomeUnrecorded) whose Err is a *StoreError of
// Op "commit": the claim, fn's writes and the outcome were then either
// all committed (the connection failed after the server committed) or
// none, so the next call either replays the outcome or runs fn again,
// never both. If begin fails, fn does not run and DoTx returns a
// *StoreError of Op "begin". When the server rolls the transaction back
// before fn ran (a deadlock between duplicates waiting for the same key,
// backends.ErrTxRolledBack), DoTx begins again, a few times at most.
//
// A concurrent call with the same key waits for the transaction (at most
// the store's lock timeout), then replays its outcome, or returns
// ErrInProgress past that time. Each first execution costs one round trip
// more than Do's, for the savepoint. The store begin returns must
// implement backends.Savepointer (every SQL store's does); DoTx returns an
// *InvalidInputError of Field "begin" otherwise.
//
// Observers and tracers see the DoOutcome call that DoTx makes inside the
// transaction, which ends before the commit: a commit that then fails
// leaves a span and events of a recorded call. Trace the commit in the
// caller, from DoTx's error.
func DoTx[X Tx, T any](ctx context.Context, scope Scope, key string, fp Fingerprint, begin func(context.Context) (X, backends.Store, error), fn func(context.Context, X) (T, error)) (T, error) {
	out, err := DoTxOutcome(ctx, scope, key, fp, begin, fn)
	return out.Value, err
}

// DoTxOutcome is DoTx, and also reports how the call ended
// (Outcome.Status), after the commit: Recorded and Held only once
// committed, Unrecorded or HoldUnrecorded when the commit failed.
func DoTxOutcome[X Tx, T any](ctx context.Context, scope Scope, key string, fp Fingerprint, begin func(context.Context) (X, backends.Store, error), fn func(context.Context, X) (T, error)) (Outcome[T], error) {
	if err := scope.validate(ctx, key, fp); err != nil {
		return Outcome[T]{}, err
	}
	if fn == nil {
		return Outcome[T]{}, &InvalidInputError{Field: "fn", Reason: "nil"}
	}
	if begin == nil {
		return Outcome[T]{}, &InvalidInputError{Field: "begin", Reason: "nil"}
	}
	for attempt := 1; ; attempt++ {
		out, err := doTx(ctx, scope, key, fp, begin, fn)
		// fn did not run (the zero Status) and the server rolled the
		// transaction back: nothing happened, so begin again.
		if out.Status != 0 || attempt == txAttempts || !errors.Is(err, backends.ErrTxRolledBack) || ctx.Err() != nil {
			return out, err
		}
	}
}

func doTx[X Tx, T any](ctx context.Context, scope Scope, key string, fp Fingerprint, begin func(context.Context) (X, backends.Store, error), fn func(context.Context, X) (T, error)) (Outcome[T], error) {
	tx, store, err := begin(ctx)
	if err != nil {
		return Outcome[T]{}, &StoreError{Op: "begin", Err: err}
	}
	ended := false
	defer func() {
		if !ended {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	sp, ok := store.(backends.Savepointer)
	if !ok {
		return Outcome[T]{}, &InvalidInputError{Field: "begin", Reason: "its store cannot take savepoints (backends.Savepointer)"}
	}
	out, err := DoOutcome(ctx, scope.bound(txStore{Store: store, sp: sp}), key, fp, func(ctx context.Context) (T, error) {
		return fn(ctx, tx)
	})
	if out.Status != Recorded && out.Status != Held {
		return out, err
	}
	ended = true
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if cerr := tx.Commit(cctx); cerr != nil {
		if out.Status == Recorded {
			out.Status = Unrecorded
		} else {
			out.Status = HoldUnrecorded
		}
		return out, errors.Join(err, &UnrecordedError{Err: &StoreError{Op: "commit", Err: cerr}})
	}
	return out, err
}

// txStore is the store of a DoTx call: the store bound to its
// transaction, which marks the transaction after a claim it wins and,
// before it holds the key, undoes fn's writes back to that mark. A mark
// that cannot be taken fails the claim (fn does not run); one that cannot
// be rolled back to fails the hold (the key is not held).
type txStore struct {
	backends.Store
	sp backends.Savepointer
}

func (s txStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, p)
	if err == nil && res.Claimed {
		if err := s.sp.Savepoint(ctx); err != nil {
			return backends.ClaimResult{}, err
		}
	}
	return res, err
}

func (s txStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	if err := s.sp.RollbackToSavepoint(ctx); err != nil {
		return false, err
	}
	return s.Store.Hold(ctx, p)
}
