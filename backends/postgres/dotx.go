package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once"
)

// TxBeginner begins a transaction: a *pgxpool.Pool, a *pgx.Conn or a
// pgx.Tx (which begins a nested transaction with a savepoint).
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// DoTx runs fn at most once per (scope, key), like once.Do, inside one
// transaction begun on db: the claim, fn's writes through tx and the
// outcome commit together or not at all, so a database side effect made
// through tx happens exactly once, with no lease to keep and no window in
// which a crash leaves it done but unrecorded.
//
// DoTx commits when the answer is recorded: fn ran and its value or final
// error was stored (fn's writes commit with it, so fn should not leave
// partial writes behind a final error), or the stored answer was replayed.
// Otherwise — a retryable error, a held error, a panic, ErrInProgress,
// ErrKeyReused, a store failure — it rolls back, leaving neither the claim nor
// fn's writes, and returns the error as once.Do would; a panic is re-raised
// after the rollback. If the commit itself fails after fn ran, DoTx returns
// an *Error with Op "commit": the claim, fn's writes and the outcome were
// then either all committed (the connection failed after the server
// committed) or none, so the next call either replays the outcome or runs fn
// again, never both.
//
// The observers and the tracer (once.WithObserver, once.WithTracer, and
// so onceotel's span and onceslog's lines) see the once.DoOutcome call
// that DoTx makes inside the transaction, and it ends before the commit.
// A commit that fails after fn ran (a deferred constraint, a lost
// connection) therefore leaves a span with outcome executed and status
// Unset, and the events claimed, executed and recorded, though nothing
// was stored. The commit's result is DoTx's return value only: trace it
// in the caller (a span around DoTx, or a log of its error).
//
// A concurrent call with the same key, another DoTx or a plain once.Do on
// a Store of the same table, waits for this transaction (at most the
// store's LockTimeout, holding one connection meanwhile), then replays its
// outcome, or receives ErrInProgress past that time; it never waits longer. The transaction runs at the server's
// default isolation level (default_transaction_isolation), which should be
// READ COMMITTED; at REPEATABLE READ or SERIALIZABLE a key whose row
// another transaction changed after the transaction's snapshot makes DoTx
// roll back and return an *Error of Code CodeSerializationFailure, never
// an answer from the snapshot (see Store.InTx): retry the call. scope's
// store is replaced by s bound to the transaction; scope's name and policy
// are kept.
func DoTx[T any](ctx context.Context, db TxBeginner, s *Store, scope once.Scope, key string, fp once.Fingerprint, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var zero T
	tx, err := db.Begin(ctx)
	if _, err := interpretError("begin", err); err != nil {
		return zero, err
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	out, err := once.DoOutcome(ctx, scope.WithStore(s.InTx(tx)), key, fp, func(ctx context.Context) (T, error) {
		return fn(ctx, tx)
	})
	if out.Status != once.Recorded && out.Status != once.Replayed {
		return out.Value, err
	}
	cerr := tx.Commit(ctx)
	done = true
	if _, cerr := interpretError("commit", cerr); cerr != nil && out.Status != once.Replayed {
		return zero, cerr
	}
	return out.Value, err
}
