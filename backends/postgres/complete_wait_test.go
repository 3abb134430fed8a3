package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// beginWithPID begins a transaction on pool, rolled back at the test's
// end unless committed, and returns it with its server process's id.
func beginWithPID(t *testing.T, pool *pgxpool.Pool) (pgx.Tx, int32) {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	var pid int32
	require.NoError(t, tx.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&pid))
	return tx, pid
}

// requireBlockedBy waits until some session waits for a lock that the
// server process pid holds.
func requireBlockedBy(t *testing.T, pool *pgxpool.Pool, pid int32, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var blocked bool
		err := pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid)))`, pid).Scan(&blocked)
		return err == nil && blocked
	}, 10*time.Second, 5*time.Millisecond, what)
}

// TestLateCompletionWaitingForARowLeavesTheSlotFree: a completion that
// waits for the key's row (a transaction took the record over after the
// completing owner's lease lapsed: a once.DoTx still running its
// handler) must not hold the key's lock slot while it waits. Waiters of
// the key, who wait for that transaction's outcome, then Watch as usual
// and are woken at its commit, instead of failing with errSlotBusy (the
// core then polls) for as long as the transaction runs. With the waiter
// check in complete.sql's WHERE, the server tried it on the row version
// the statement read before it waited, and took the slot's exclusive
// lock for the whole wait.
func TestLateCompletionWaitingForARowLeavesTheSlotFree(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	scope := backendtest.Scope(t)
	late, taker := claimParams(scope, "k"), claimParams(scope, "k")
	late.Lease = time.Microsecond
	r, err := s.Claim(t.Context(), late)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	backendtest.Elapse(t, s, late.Lease)

	tx, pid := beginWithPID(t, pool)
	r, err = s.InTx(tx).Claim(t.Context(), taker)
	require.NoError(t, err)
	require.True(t, r.Claimed && r.TookOver, "%+v", r)
	completed := make(chan error, 1)
	go func() {
		ok, err := s.Complete(t.Context(), backends.CompleteParams{Scope: scope, Key: "k", Owner: late.Owner, Outcome: []byte("late"), Retention: time.Hour})
		if err == nil && ok {
			err = errors.New("the late owner's completion applied over the takeover")
		}
		completed <- err
	}()
	requireBlockedBy(t, pool, pid, "the late completion waits for the takeover's transaction")

	ch, stop, err := s.Watch(t.Context(), scope, "k")
	require.NoError(t, err, "a completion waiting for the key's row holds its slot")
	defer stop()
	complete(t, s.InTx(tx), scope, "k", taker.Owner)
	require.NoError(t, tx.Commit(t.Context()))
	require.NoError(t, <-completed)
	requireWoken(t, ch, "the takeover's completion")
}
