package mysqlstore

import (
	"context"
	"database/sql"

	"github.com/stagedoor/once"
)

// TxBeginner begins a transaction: an *sql.DB or an *sql.Conn.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// DoTx runs fn at most once per (scope, key), like once.Do, inside one
// READ COMMITTED transaction begun on db: the claim, fn's writes through tx
// and the outcome commit together or not at all, so a database side effect
// made through tx happens exactly once, with no lease to keep and no window
// in which a crash leaves it done but unrecorded. The records table must
// use InnoDB (Migrate creates it so), and fn's tables too.
//
// DoTx commits when the answer is recorded: fn ran and its value or final
// error was stored (fn's writes commit with it, so fn should not leave
// partial writes behind a final error), or the stored answer was replayed.
// Otherwise — a retryable error, a held error, a panic, ErrInProgress,
// ErrKeyReused, a store failure — it rolls back, leaving neither the claim
// nor fn's writes, and returns the error as once.Do would; a panic is
// re-raised after the rollback. If the commit itself fails after fn ran,
// DoTx returns an *Error with Op "commit": the claim, fn's writes and the
// outcome were then either all committed (the connection failed after the
// server committed) or none, so the next call either replays the outcome or
// runs fn again, never both.
//
// A concurrent call with the same key waits for this transaction (at most
// the store's LockTimeout), then replays its outcome, or receives
// ErrInProgress past that time. When InnoDB breaks a deadlock between such
// waiters by rolling one back before its fn ran, DoTx begins that call
// again, at most five times in all; after the fifth deadlock it returns
// that error (Code CodeDeadlock), fn having never run. scope's store is
// replaced by s bound to the transaction; scope's name and policy are
// kept.
func DoTx[T any](ctx context.Context, db TxBeginner, s *Store, scope once.Scope, key string, fp once.Fingerprint, fn func(ctx context.Context, tx *sql.Tx) (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, ran, err := doTxOnce(ctx, db, s, scope, key, fp, fn)
		// InnoDB rolled the whole transaction back to break a deadlock
		// before fn ran (two duplicates waiting for a claim that rolled
		// back): nothing happened, so begin again.
		if ran || attempt == deadlockAttempts || code(err) != CodeDeadlock || ctx.Err() != nil {
			return v, err
		}
	}
}

func doTxOnce[T any](ctx context.Context, db TxBeginner, s *Store, scope once.Scope, key string, fp once.Fingerprint, fn func(ctx context.Context, tx *sql.Tx) (T, error)) (_ T, ran bool, _ error) {
	var zero T
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if _, err := interpretError("begin", err); err != nil {
		return zero, false, err
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback()
		}
	}()
	out, err := once.DoOutcome(ctx, scope.WithStore(&txStore{r: runner{s: s, tx: tx}, readCommitted: true}), key, fp, func(ctx context.Context) (T, error) {
		ran = true
		return fn(ctx, tx)
	})
	if out.Status != once.Recorded && out.Status != once.Replayed {
		return out.Value, ran, err
	}
	cerr := tx.Commit()
	done = true
	if _, cerr := interpretError("commit", cerr); cerr != nil && out.Status != once.Replayed {
		return zero, ran, cerr
	}
	return out.Value, ran, err
}
