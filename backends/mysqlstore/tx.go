package mysqlstore

import (
	"context"
	"database/sql"

	"github.com/stagedoor/once/backends"
)

// Tx is a transaction begun by BeginTx: an *sql.Tx whose Commit and
// Rollback take a context, as once.Tx's do. The context is not used: an
// *sql.Tx ends with the context it was begun with, or with Commit or
// Rollback.
type Tx struct{ *sql.Tx }

// Commit commits the transaction.
func (t Tx) Commit(context.Context) error {
	_, err := interpretError("commit", t.Tx.Commit())
	return err
}

// Rollback rolls the transaction back.
func (t Tx) Rollback(context.Context) error {
	_, err := interpretError("rollback", t.Tx.Rollback())
	return err
}

// BeginTx begins a READ COMMITTED transaction on the Store's *sql.DB and
// returns it with the store bound to it: the begin that once.DoTx takes,
//
//	once.DoTx(ctx, scope, key, fp, store.BeginTx, fn)
//
// The records table must use InnoDB (Migrate creates it so), and so must
// the tables fn writes. When InnoDB breaks a deadlock between duplicates
// waiting for a claim that rolled back, the claim's error matches
// backends.ErrTxRolledBack (Code CodeDeadlock), and once.DoTx begins
// again, fn not having run.
func (s *Store) BeginTx(ctx context.Context) (Tx, backends.Store, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if _, err := interpretError("begin", err); err != nil {
		return Tx{}, nil, err
	}
	return Tx{tx}, &txStore{r: runner{s: s, tx: tx}, readCommitted: true}, nil
}

// InTx returns a store whose statements run on tx, the caller's
// transaction: a claim, the caller's own writes in tx and the outcome then
// commit or roll back together. It must not be used concurrently (an
// *sql.Tx is not meant to be). once.DoTx takes it from BeginTx; use InTx
// in a begin of your own, to bind a transaction begun elsewhere.
//
// A concurrent duplicate in another transaction blocks on the key's row
// lock until the first transaction ends; Claim waits for it at most the
// Config's LockTimeout (the session's innodb_lock_wait_timeout is left as
// it was), then reports the key pending with a short LeaseRemaining,
// which the core turns into ErrInProgress. Only the waiting statement is
// rolled back (unless the server runs with innodb_rollback_on_timeout), so
// tx stays usable.
//
// tx must not run at READ UNCOMMITTED: the claim's first read would see
// another transaction's uncommitted outcome, which may yet roll back. The
// Store refuses a session at that level (ErrSession, see New), but a level
// set for tx alone (sql.TxOptions.Isolation) shows in no variable, so it
// cannot refuse that.
//
// tx should run at READ COMMITTED, as BeginTx's does. At REPEATABLE READ
// (MySQL's default) the claim's first read is a consistent read of tx's
// snapshot, which may predate the key's latest committed version (a record
// deleted, then completed with another outcome, since tx's first read):
// so a claim that finds a completed record (a replay, or a mismatch with
// one) reads it again with a locking read (LOCK IN SHARE MODE, the latest
// committed version), and answers, claims or takes over from that read, at
// one round trip more; the shared lock keeps the record, as answered,
// until tx ends (a Delete, or a claim of the key once it has expired, then
// waits for tx, at most its LockTimeout). A pending or held record is
// answered from the snapshot, with no lock that would hold its owner's
// Complete back: a stale answer there is an ErrInProgress or ErrKeyReused
// that a new transaction corrects, never an outcome. Resolve answers from
// the snapshot too. InnoDB's gap and shared-then-exclusive locks also make
// deadlocks between concurrent claims of one key likelier at REPEATABLE
// READ; InnoDB then rolls back the whole of one transaction and the Store
// returns an *Error of Code CodeDeadlock: retry the transaction. At
// SERIALIZABLE every read in tx is a locking read already. The store is
// valid until tx ends.
func (s *Store) InTx(tx *sql.Tx) backends.Store {
	return &txStore{r: runner{s: s, tx: tx}}
}

// txStore is a Store bound to one transaction. readCommitted is set when
// the Store began tx itself at READ COMMITTED (BeginTx): each of its
// consistent reads then sees the latest committed version.
type txStore struct {
	r             runner
	readCommitted bool
}

var (
	_ backends.Store       = (*txStore)(nil)
	_ backends.Savepointer = (*txStore)(nil)
)

// Savepoint implements backends.Savepointer with a SAVEPOINT in the
// transaction (one round trip).
func (t *txStore) Savepoint(ctx context.Context) error {
	_, err := t.r.tx.ExecContext(ctx, "SAVEPOINT once_handler")
	_, err = interpretError("savepoint", err)
	return err
}

// RollbackToSavepoint implements backends.Savepointer with a ROLLBACK TO
// SAVEPOINT in the transaction. It fails when InnoDB rolled the whole
// transaction back (a deadlock, or a lock wait timeout under
// innodb_rollback_on_timeout), which discards the savepoint.
func (t *txStore) RollbackToSavepoint(ctx context.Context) error {
	_, err := t.r.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT once_handler")
	_, err = interpretError("rollback to savepoint", err)
	return err
}

// Claim implements backends.Store in one CALL inside the transaction.
// When the CALL reports a completed record and tx may run at REPEATABLE
// READ (see InTx), whose snapshot may be stale, Claim decides again from a
// locking read of the key (claimStatements, reading first).
func (t *txStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	res, err := t.r.claim(ctx, p)
	if err != nil || t.readCommitted || res.Claimed || res.Existing.State != backends.StateCompleted {
		return res, err
	}
	return t.r.claimStatements(ctx, p, false, t.r.s.sql.peekLocked)
}

// Complete implements backends.Store.
func (t *txStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return t.r.complete(ctx, p)
}

// Renew implements backends.Store.
func (t *txStore) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return t.r.renew(ctx, p)
}

// Release implements backends.Store.
func (t *txStore) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return t.r.release(ctx, p)
}

// Checkpoint implements backends.Store in one UPDATE inside the
// transaction: the checkpoints commit with the transaction's other writes,
// or not at all.
func (t *txStore) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return t.r.checkpoint(ctx, p)
}

// Resolve implements backends.Store.
func (t *txStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return t.r.resolve(ctx, p)
}
