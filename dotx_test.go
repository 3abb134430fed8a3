package once_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// The decisions of DoTx around the transaction, on a fake transaction
// over the memory store (which cannot roll back: the exactly-once of a
// real row is internal/txtest's, on every SQL store).

// fakeTx records how the transaction ended.
type fakeTx struct {
	commitErr             error
	commits, rollbacks    int
	savepoints, undos     int
	savepointErr, undoErr error
}

func (t *fakeTx) Commit(context.Context) error   { t.commits++; return t.commitErr }
func (t *fakeTx) Rollback(context.Context) error { t.rollbacks++; return nil }

// txBound is the store bound to a fakeTx: a Savepointer that counts.
type txBound struct {
	backends.Store
	tx *fakeTx
}

func (s txBound) Savepoint(context.Context) error { s.tx.savepoints++; return s.tx.savepointErr }
func (s txBound) RollbackToSavepoint(context.Context) error {
	s.tx.undos++
	return s.tx.undoErr
}

// fakeBegin returns a begin over store that records each transaction.
func fakeBegin(store backends.Store, txs *[]*fakeTx, configure func(*fakeTx)) func(context.Context) (*fakeTx, backends.Store, error) {
	return func(context.Context) (*fakeTx, backends.Store, error) {
		tx := &fakeTx{}
		if configure != nil {
			configure(tx)
		}
		*txs = append(*txs, tx)
		return tx, txBound{store, tx}, nil
	}
}

func TestDoTxCommitsOnlyWhatItStored(t *testing.T) {
	ctx := context.Background()
	store := memory.New(nil)
	scope := once.New(store).Scope("s")
	var txs []*fakeTx
	begin := fakeBegin(store, &txs, nil)
	cases := []struct {
		key    string
		fn     func(context.Context, *fakeTx) (int, error)
		status once.Status
		commit bool
	}{
		{"value", func(context.Context, *fakeTx) (int, error) { return 1, nil }, once.Recorded, true},
		{"value", func(context.Context, *fakeTx) (int, error) { return 2, nil }, once.Replayed, false},
		{"final", func(context.Context, *fakeTx) (int, error) { return 0, once.Final(errors.New("declined")) }, once.Recorded, true},
		{"held", func(context.Context, *fakeTx) (int, error) { return 0, once.Hold(errors.New("timeout")) }, once.Held, true},
		{"held", func(context.Context, *fakeTx) (int, error) { return 0, nil }, 0, false}, // in progress
		{"retry", func(context.Context, *fakeTx) (int, error) { return 0, errors.New("503") }, once.Released, false},
	}
	for i, c := range cases {
		out, err := once.DoTxOutcome(ctx, scope, c.key, nil, begin, c.fn)
		require.Equal(t, c.status, out.Status, "case %d (%s): %v", i, c.key, err)
		tx := txs[len(txs)-1]
		require.Equal(t, c.commit, tx.commits == 1, "case %d (%s): committed", i, c.key)
		require.Equal(t, !c.commit, tx.rollbacks == 1, "case %d (%s): rolled back", i, c.key)
	}
	held := txs[3]
	require.Equal(t, 1, held.savepoints, "a savepoint after the claim")
	require.Equal(t, 1, held.undos, "fn's writes undone before the hold")
	require.Zero(t, txs[1].savepoints, "no savepoint for a replay")

	require.Panics(t, func() {
		_, _ = once.DoTx(ctx, scope, "panic", nil, begin, func(context.Context, *fakeTx) (int, error) { panic("bug") })
	})
	require.Equal(t, 1, txs[len(txs)-1].rollbacks, "a panic rolls back")
}

func TestDoTxFailedCommit(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		err    error
		status once.Status
	}{
		{"recorded", nil, once.Unrecorded},
		{"held", once.Hold(errors.New("timeout")), once.HoldUnrecorded},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := memory.New(nil)
			scope := once.New(store).Scope("s")
			var txs []*fakeTx
			reset := errors.New("connection reset")
			begin := fakeBegin(store, &txs, func(tx *fakeTx) { tx.commitErr = reset })
			out, err := once.DoTxOutcome(ctx, scope, "k", nil, begin, func(context.Context, *fakeTx) (int, error) { return 7, c.err })
			require.Equal(t, c.status, out.Status)
			require.Equal(t, 7, out.Value)
			require.ErrorIs(t, err, once.ErrOutcomeUnrecorded)
			require.ErrorIs(t, err, reset)
			var se *once.StoreError
			require.ErrorAs(t, err, &se)
			require.Equal(t, "commit", se.Op)
		})
	}
}

func TestDoTxBeforeFnRuns(t *testing.T) {
	ctx := context.Background()
	store := memory.New(nil)
	scope := once.New(store).Scope("s")
	fn := func(context.Context, *fakeTx) (int, error) { t.Error("fn ran"); return 0, nil }

	down := errors.New("no connection")
	_, err := once.DoTx(ctx, scope, "k", nil, func(context.Context) (*fakeTx, backends.Store, error) { return nil, nil, down }, fn)
	var se *once.StoreError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "begin", se.Op)
	require.ErrorIs(t, err, down)

	tx := &fakeTx{}
	_, err = once.DoTx(ctx, scope, "k", nil, func(context.Context) (*fakeTx, backends.Store, error) { return tx, store, nil }, fn)
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid, "a store without savepoints")
	require.Equal(t, "begin", invalid.Field)
	require.Equal(t, 1, tx.rollbacks)

	var txs []*fakeTx
	_, err = once.DoTx(ctx, scope, "k", nil, fakeBegin(store, &txs, func(tx *fakeTx) { tx.savepointErr = down }), fn)
	require.ErrorAs(t, err, &se, "the savepoint fails the claim")
	require.Equal(t, "claim", se.Op)
	require.Equal(t, 1, txs[0].rollbacks)

	_, err = once.DoTx(ctx, scope, "", nil, fakeBegin(store, &txs, nil), fn)
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "key", invalid.Field)
	require.Len(t, txs, 1, "bad input begins nothing")
	_, err = once.DoTx[*fakeTx, int](ctx, scope, "k", nil, nil, fn)
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "begin", invalid.Field)
}

// A hold whose rollback to the savepoint fails is not a hold: the key is
// not held, the transaction rolls back.
func TestDoTxHoldThatCannotUndoTheWrites(t *testing.T) {
	store := memory.New(nil)
	scope := once.New(store).Scope("s")
	var txs []*fakeTx
	gone := errors.New("savepoint gone")
	out, err := once.DoTxOutcome(context.Background(), scope, "k", nil, fakeBegin(store, &txs, func(tx *fakeTx) { tx.undoErr = gone }),
		func(context.Context, *fakeTx) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	require.Equal(t, once.HoldUnrecorded, out.Status)
	require.ErrorIs(t, err, gone)
	require.ErrorIs(t, err, once.ErrOutcomeUnrecorded)
	require.Equal(t, 1, txs[0].rollbacks)
}

// rolledBackClaims fails its first n claims as a server that rolled the
// transaction back (a deadlock victim).
type rolledBackClaims struct {
	backends.Store
	n *int
}

func (s rolledBackClaims) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if *s.n > 0 {
		*s.n--
		return backends.ClaimResult{}, fmt.Errorf("deadlock: %w", backends.ErrTxRolledBack)
	}
	return s.Store.Claim(ctx, p)
}

// A transaction the server rolled back before fn ran is begun again, a
// few times at most.
func TestDoTxBeginsAgainAfterTheServerRolledBack(t *testing.T) {
	store := memory.New(nil)
	scope := once.New(store).Scope("s")
	for _, c := range []struct {
		failures, begins int
		ok               bool
	}{{failures: 2, begins: 3, ok: true}, {failures: 100, begins: 5}} {
		failures, runs := c.failures, 0
		var txs []*fakeTx
		_, err := once.DoTx(context.Background(), scope, fmt.Sprint("k", c.failures), nil, fakeBegin(rolledBackClaims{store, &failures}, &txs, nil),
			func(context.Context, *fakeTx) (int, error) { runs++; return 1, nil })
		if c.ok {
			require.NoError(t, err)
			require.Equal(t, 1, runs)
		} else {
			require.ErrorIs(t, err, backends.ErrTxRolledBack)
			require.Zero(t, runs)
		}
		require.Len(t, txs, c.begins)
	}
}

// A store bound to a transaction is never renewed: an uncommitted claim
// is invisible to other sessions, and a transaction must not be used from
// a renewal's goroutine.
func TestDoTxNeverRenews(t *testing.T) {
	store := newFaultStore(memory.New(nil))
	scope := once.New(store, once.WithLease(15*time.Millisecond)).Scope("s")
	var txs []*fakeTx
	_, err := once.DoTx(context.Background(), scope, "k", nil, fakeBegin(store, &txs, nil), func(context.Context, *fakeTx) (int, error) {
		time.Sleep(80 * time.Millisecond) // several renewal intervals
		return 1, nil
	})
	require.NoError(t, err)
	require.Zero(t, store.Calls("renew"))
}
