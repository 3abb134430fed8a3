package postgres

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/pgsql"
)

// lockTimeoutHint is the LeaseRemaining reported when a Claim in a
// transaction gave up waiting for a concurrent uncommitted claim: the core
// answers ErrInProgress with it as the retry-after hint.
const lockTimeoutHint = time.Second

// BeginTx begins a transaction on the Store's DB and returns it with the
// store bound to it (InTx): the begin that once.DoTx takes,
//
//	once.DoTx(ctx, scope, key, fp, store.BeginTx, fn)
//
// The transaction runs at the server's default isolation level, which
// should be READ COMMITTED (see InTx). A Store over a single connection
// (a *pgx.Conn, Config.SingleConnection) cannot run a transaction beside
// its own statements: BeginTx returns an *Error of Op "begin" without
// contacting the server; begin on another connection and bind it with
// InTx.
func (s *Store) BeginTx(ctx context.Context) (pgx.Tx, backends.Store, error) {
	if s.txdb == nil {
		return nil, nil, &Error{Op: "begin", kind: "a Store over a single connection cannot begin a transaction beside its own statements"}
	}
	tx, err := s.txdb.Begin(ctx)
	if _, err := interpretError("begin", err); err != nil {
		return nil, nil, err
	}
	return interpretedTx{tx}, s.InTx(tx), nil
}

// interpretedTx is a transaction whose Commit and Rollback errors are the
// Store's *Error, as every other error of the Store.
type interpretedTx struct{ pgx.Tx }

func (t interpretedTx) Commit(ctx context.Context) error {
	_, err := interpretError("commit", t.Tx.Commit(ctx))
	return err
}

func (t interpretedTx) Rollback(ctx context.Context) error {
	_, err := interpretError("rollback", t.Tx.Rollback(ctx))
	return err
}

// InTx returns a store whose statements run on tx, the caller's
// transaction: a claim, the caller's own writes in tx and the outcome then
// commit or roll back together. It must not be used concurrently (a pgx.Tx
// is not). once.DoTx takes it from BeginTx; use InTx in a begin of your
// own, to bind a transaction begun elsewhere (another connection, a
// nested transaction).
//
// A concurrent duplicate in another transaction blocks on the key's unique
// index until the first transaction ends; Claim waits for it at most the
// Config's LockTimeout, under a savepoint and a transaction-local
// lock_timeout that it restores afterwards. Past that it rolls back to the
// savepoint, leaving tx usable, and reports the key pending with a short
// LeaseRemaining, which the core turns into ErrInProgress.
//
// tx should run at READ COMMITTED (the default), where a Claim answers the
// key's record as last committed. At REPEATABLE READ or SERIALIZABLE a
// Claim never answers from tx's snapshot when another transaction
// inserted, changed or deleted the key's row after it (a deleted record's
// outcome, a completed record as still pending): it fails with an *Error
// of Code CodeSerializationFailure (backends.ErrTxRolledBack: once.DoTx
// begins again, fn not having run). A row unchanged since the snapshot is answered as at READ
// COMMITTED, with no write and no lock. At those levels a Claim also waits
// (at most LockTimeout, then it reports the key pending as above) for a
// transaction not yet ended that changed the key's row, and a Claim that
// waits for the key (once.WithWait) in tx fails so at the first change of
// the record after the snapshot: its owner's completion, release or lease
// renewal. The store is valid until tx ends.
func (s *Store) InTx(tx pgx.Tx) backends.Store {
	return &txStore{s: s, tx: tx}
}

// txStore is a Store bound to one transaction.
type txStore struct {
	s  *Store
	tx pgx.Tx
}

var (
	_ backends.Store       = (*txStore)(nil)
	_ backends.Savepointer = (*txStore)(nil)
)

// Savepoint implements backends.Savepointer with a SAVEPOINT in tx (one
// round trip).
func (t *txStore) Savepoint(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, pgsql.HandlerSavepoint)
	_, err = interpretError("savepoint", err)
	return err
}

// RollbackToSavepoint implements backends.Savepointer with a ROLLBACK TO
// SAVEPOINT in tx, which also makes tx usable again after a failed
// statement.
func (t *txStore) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.tx.Exec(ctx, pgsql.RollbackHandlerSavepoint)
	_, err = interpretError("rollback to savepoint", err)
	return err
}

// Claim implements backends.Store with claim_tx.sql, which reads the key's
// row and inserts the claim when it saw none in one statement, and at
// REPEATABLE READ and SERIALIZABLE fails instead of answering from an old
// snapshot (see InTx). Its statements go in one pipelined batch, so it
// costs one round trip (one more, takeover.sql, for the rare cases of
// Store.Claim; one more for a key found held, to read the hold's details in tx, and the Claim
// runs again as Store.Claim does when that read finds the hold ended, at
// most four times in all, with the same report when they are exhausted).
func (t *txStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := claimLoop(ctx, p, func(ctx context.Context) (fastRow, error) {
			var r fastRow
			err := t.guarded(ctx, "claim", t.s.sql.ClaimTx, t.s.sql.claimArgs(p), r.scan)
			return r, err
		}, func(ctx context.Context) (claimRow, error) {
			return t.claimOnce(ctx, p)
		})
		if err != nil {
			return res, err
		}
		again, err := t.s.heldAgain(ctx, t.tx, p.Scope, p.Key, p.Fingerprint, &res.Existing, attempt, claimable)
		if !again {
			return res, err
		}
	}
}

func (t *txStore) claimOnce(ctx context.Context, p backends.ClaimParams) (claimRow, error) {
	var r claimRow
	err := t.guarded(ctx, "claim", t.s.sql.Takeover, t.s.sql.claimArgs(p), r.scan)
	return r, err
}

// guarded runs one statement that sets its own lock_timeout (Claim,
// Resolve) in one pipelined batch, under a savepoint, and restores the
// transaction's lock_timeout afterwards. If the statement fails (its lock
// timeout fired), it rolls back to the savepoint, so tx stays usable.
func (t *txStore) guarded(ctx context.Context, op, sql string, args []any, scan func(pgx.Row) error) error {
	b := &pgx.Batch{}
	b.Queue(pgsql.Savepoint)
	b.Queue(pgsql.SaveLockTimeout)
	b.Queue(sql, args...).QueryRow(scan)
	b.Queue(pgsql.RestoreLockTimeout)
	b.Queue(pgsql.ReleaseSavepoint)
	err := t.tx.SendBatch(ctx, b).Close()
	if _, err := interpretError(op, err); err != nil {
		if ctx.Err() == nil {
			// Undo the failed statement and our lock_timeout; tx stays
			// usable. If this fails too, tx is beyond saving anyway.
			_, _ = t.tx.Exec(ctx, pgsql.RollbackSavepoint)
		}
		return err
	}
	return nil
}

// Complete implements backends.Store.
func (t *txStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return t.s.sql.complete(ctx, t.tx, p)
}

// Renew implements backends.Store.
func (t *txStore) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return t.s.sql.renew(ctx, t.tx, p)
}

// Release implements backends.Store.
func (t *txStore) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return t.s.sql.release(ctx, t.tx, p)
}

// Checkpoint implements backends.Store in tx: the checkpoints commit with
// tx's other writes, or not at all.
func (t *txStore) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return t.s.sql.checkpoint(ctx, t.tx, p)
}

// Resolve implements backends.Store; a key found held takes one more
// statement, and Resolve runs again, as Store.Resolve does (at most four
// times in all, with the same report when they are exhausted).
func (t *txStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := resolveLoop(ctx, p, func(ctx context.Context) (resolveRow, error) {
			var r resolveRow
			err := t.guarded(ctx, "resolve", t.s.sql.Resolve, t.s.sql.resolveArgs(p), r.scan)
			return r, err
		})
		if err != nil {
			return res, err
		}
		again, err := t.s.heldAgain(ctx, t.tx, p.Scope, p.Key, p.Fingerprint, &res.Existing, attempt, resolvable)
		if !again {
			return res, err
		}
	}
}

// maxLockTimeoutMS is the largest lock_timeout PostgreSQL accepts.
const maxLockTimeoutMS = math.MaxInt32

// lockTimeoutSetting renders d as a lock_timeout value in whole
// milliseconds, rounded up: PostgreSQL reads "0ms" as no timeout at all, so
// a sub-millisecond d must become 1ms, never 0. It saturates at the
// server's maximum (about 24.8 days).
func lockTimeoutSetting(d time.Duration) string {
	ms := d / time.Millisecond
	if d%time.Millisecond > 0 {
		ms++
	}
	return strconv.FormatInt(int64(min(max(ms, 1), maxLockTimeoutMS)), 10) + "ms"
}
