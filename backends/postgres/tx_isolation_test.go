package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

var isolationLevels = []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable}

// snapshotChange is a key's history around a caller's transaction: before
// runs before the transaction's snapshot, after once the snapshot is taken
// and before the transaction's Claim. changed says that after changes the
// key's row, which may then fail a Claim at REPEATABLE READ or
// SERIALIZABLE.
type snapshotChange struct {
	name          string
	before, after func(t *testing.T, s *Store, scope, key string)
	changed       bool
}

func completeKey(outcome string) func(*testing.T, *Store, string, string) {
	return func(t *testing.T, s *Store, scope, key string) {
		t.Helper()
		p := claimParams(scope, key)
		r, err := s.Claim(context.Background(), p)
		require.NoError(t, err)
		require.True(t, r.Claimed, "claim %+v", r)
		ok, err := s.Complete(context.Background(), backends.CompleteParams{Scope: scope, Key: key, Owner: p.Owner, Outcome: []byte(outcome), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
}

func deleteKey(t *testing.T, s *Store, scope, key string) {
	t.Helper()
	deleted, err := s.Delete(context.Background(), scope, key)
	require.NoError(t, err)
	require.True(t, deleted)
}

// pendingOwner is the owner of the pending record that claimPending
// writes, which completePending and releasePending complete and release.
const pendingOwner = "0123456789abcdef0123456789abcdef"

func claimPending(t *testing.T, s *Store, scope, key string) {
	t.Helper()
	p := claimParams(scope, key)
	p.Owner = pendingOwner
	r, err := s.Claim(context.Background(), p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
}

func completePending(t *testing.T, s *Store, scope, key string) {
	t.Helper()
	ok, err := s.Complete(context.Background(), backends.CompleteParams{Scope: scope, Key: key, Owner: pendingOwner, Outcome: []byte("new"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
}

func releasePending(t *testing.T, s *Store, scope, key string) {
	t.Helper()
	ok, err := s.Release(context.Background(), backends.ReleaseParams{Scope: scope, Key: key, Owner: pendingOwner})
	require.NoError(t, err)
	require.True(t, ok)
}

func renewPending(t *testing.T, s *Store, scope, key string) {
	t.Helper()
	ok, err := s.Renew(context.Background(), backends.RenewParams{Scope: scope, Key: key, Owner: pendingOwner, Lease: 2 * time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
}

func nothing(*testing.T, *Store, string, string) {}

var snapshotChanges = []snapshotChange{
	{name: "completed unchanged", before: completeKey("old"), after: nothing},
	{name: "pending unchanged", before: claimPending, after: nothing},
	{name: "absent unchanged", before: nothing, after: nothing},
	// The reviewer's case: Admin.Delete and a new intent that completed
	// with another outcome.
	{name: "deleted and completed again", before: completeKey("old"), after: func(t *testing.T, s *Store, scope, key string) {
		deleteKey(t, s, scope, key)
		completeKey("new")(t, s, scope, key)
	}, changed: true},
	{name: "deleted", before: completeKey("old"), after: deleteKey, changed: true},
	{name: "pending completed", before: claimPending, after: completePending, changed: true},
	{name: "pending released", before: claimPending, after: releasePending, changed: true},
	{name: "pending renewed", before: claimPending, after: renewPending, changed: true},
	{name: "absent completed", before: nothing, after: completeKey("new"), changed: true},
}

// TestInTxClaimNeverAnswersFromAnOlderSnapshot: a Claim through InTx
// answers the key's record as committed when the Claim runs, at every
// isolation level, or, at REPEATABLE READ and SERIALIZABLE only, fails
// with an *Error of Code CodeSerializationFailure when another transaction
// changed the key's row after tx's snapshot (Store.InTx). It never answers
// from the snapshot's older row: a deleted record's outcome, a completed
// record as pending. A row unchanged since the snapshot never fails it.
func TestInTxClaimNeverAnswersFromAnOlderSnapshot(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	for _, iso := range isolationLevels {
		for _, c := range snapshotChanges {
			t.Run(fmt.Sprintf("%s/%s", iso, c.name), func(t *testing.T) {
				ctx := context.Background()
				scope := backendtest.Scope(t)
				c.before(t, s, scope, "k")
				tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
				require.NoError(t, err)
				defer func() { _ = tx.Rollback(ctx) }()
				_, err = tx.Exec(ctx, "SELECT 1") // takes the snapshot
				require.NoError(t, err)
				c.after(t, s, scope, "k")
				now, err := s.Get(ctx, scope, "k")
				found := now.State != 0
				require.NoError(t, err)

				r, err := s.InTx(tx).Claim(ctx, claimParams(scope, "k"))
				if err != nil {
					require.True(t, c.changed && iso != pgx.ReadCommitted, "only a row changed after a REPEATABLE READ or SERIALIZABLE snapshot fails the claim: %v", err)
					var e *Error
					require.ErrorAs(t, err, &e)
					require.Equal(t, CodeSerializationFailure, e.Code, "%v", err)
					return
				}
				if !found {
					require.True(t, r.Claimed, "the key is absent, the claim answered %+v", r)
					return
				}
				require.False(t, r.Claimed, "the key holds %+v, the claim answered Claimed", now)
				require.Equal(t, now.State, r.Existing.State, "the key holds %+v, the claim answered %+v", now, r.Existing)
				require.Equal(t, string(now.Outcome), string(r.Existing.Outcome))
			})
		}
	}
}

// TestInTxWaitEndsOnTheCompletion: a once.Do WithWait through InTx, which
// finds the key pending, ends when the owner completes it: with the
// owner's value, or, at REPEATABLE READ and SERIALIZABLE, with a
// CodeSerializationFailure (the record changed after tx's snapshot). It
// never goes on reading the pending row of its snapshot until the wait
// runs out.
func TestInTxWaitEndsOnTheCompletion(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	for _, iso := range isolationLevels {
		t.Run(string(iso), func(t *testing.T) {
			ctx := context.Background()
			name := backendtest.Scope(t)
			owner := once.New(s, once.WithLease(time.Minute)).Scope(name)
			started, finish := make(chan struct{}), make(chan struct{})
			ownerDone := make(chan error, 1)
			go func() {
				_, err := once.Do(ctx, owner, "k", nil, func(context.Context) (string, error) {
					close(started)
					<-finish
					return "owner's", nil
				})
				ownerDone <- err
			}()
			<-started
			tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			_, err = tx.Exec(ctx, "SELECT 1") // takes the snapshot
			require.NoError(t, err)
			go func() {
				time.Sleep(100 * time.Millisecond) // the waiter has found the key pending
				close(finish)
			}()
			waiter := once.New(s.InTx(tx), once.WithWait(20*time.Second)).Scope(name)
			v, err := once.Do(ctx, waiter, "k", nil, func(context.Context) (string, error) {
				return "waiter's", nil
			})
			require.NoError(t, <-ownerDone)
			var e *Error
			switch {
			case err == nil:
				assert.Equal(t, "owner's", v)
			case iso != pgx.ReadCommitted && errors.As(err, &e) && e.Code == CodeSerializationFailure:
			default:
				t.Fatalf("the wait ended with %v (value %q), want the owner's value or a serialization failure", err, v)
			}
		})
	}
}

// TestDoTxInAnOlderSnapshot: once.DoTx over a REPEATABLE READ or
// SERIALIZABLE transaction (a begin of its own: a nested transaction, its
// savepoint, bound with InTx) whose snapshot predates an Admin.Delete and
// a new intent's completion returns the new intent's value or a
// CodeSerializationFailure (after beginning again, in the same snapshot,
// as for any backends.ErrTxRolledBack), never the deleted record's value.
func TestDoTxInAnOlderSnapshot(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	for _, iso := range isolationLevels {
		t.Run(string(iso), func(t *testing.T) {
			ctx := context.Background()
			name := backendtest.Scope(t)
			scope := once.New(s).Scope(name)
			do := func(v string) {
				t.Helper()
				got, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) { return v, nil })
				require.NoError(t, err)
				require.Equal(t, v, got)
			}
			do("old")
			outer, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
			require.NoError(t, err)
			defer func() { _ = outer.Rollback(ctx) }()
			_, err = outer.Exec(ctx, "SELECT 1") // takes the snapshot
			require.NoError(t, err)
			deleteKey(t, s, name, "k")
			do("new")
			begin := func(ctx context.Context) (pgx.Tx, backends.Store, error) {
				tx, err := outer.Begin(ctx)
				if err != nil {
					return nil, nil, err
				}
				return tx, s.InTx(tx), nil
			}
			v, err := once.DoTx(ctx, scope, "k", nil, begin, func(context.Context, pgx.Tx) (string, error) {
				return "ran", nil
			})
			var e *Error
			switch {
			case err == nil:
				assert.Equal(t, "new", v)
			case iso != pgx.ReadCommitted && errors.As(err, &e) && e.Code == CodeSerializationFailure:
			default:
				t.Fatalf("DoTx returned %q, %v; want \"new\" or a serialization failure", v, err)
			}
		})
	}
}
