package mysqlstore

import (
	"context"
	"database/sql"

	"github.com/stagedoor/once/backends"
)

// InTx returns a store whose statements run on tx, the caller's
// transaction: a claim, the caller's own writes in tx and the outcome then
// commit or roll back together. The returned store implements
// backends.Exclusive: it must not be used concurrently (an *sql.Tx is not
// meant to be), and the core does not renew its leases, since an
// uncommitted claim is invisible to other sessions anyway.
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
// cannot refuse that. tx should run at READ COMMITTED, as DoTx's does. At MySQL's default
// REPEATABLE READ the claim still decides correctly (it re-reads with a
// locking read when its snapshot is stale), but InnoDB's gap and
// shared-then-exclusive locks make deadlocks between concurrent claims of
// one key likelier; InnoDB then rolls back the whole of one transaction and
// the Store returns an *Error of Code CodeDeadlock: retry the transaction.
// The store is valid until tx ends.
func (s *Store) InTx(tx *sql.Tx) backends.Store {
	return &txStore{r: runner{s: s, tx: tx}}
}

// txStore is a Store bound to one transaction.
type txStore struct{ r runner }

var (
	_ backends.Store     = (*txStore)(nil)
	_ backends.Exclusive = (*txStore)(nil)
)

// Exclusive implements backends.Exclusive.
func (*txStore) Exclusive() {}

// Claim implements backends.Store in one CALL inside the transaction.
func (t *txStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return t.r.claim(ctx, p)
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

// Resolve implements backends.Store.
func (t *txStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return t.r.resolve(ctx, p)
}
