package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// The wait of a Claim for a committing DoTx.

// appPool returns a pool whose sessions carry application_name name, so
// that the test can watch them in pg_stat_activity.
func appPool(t *testing.T, name string, conns int32) *pgxpool.Pool {
	return newPool(t, func(cfg *pgxpool.Config) {
		cfg.MaxConns = conns
		cfg.ConnConfig.RuntimeParams["application_name"] = name
	})
}

// lockWaitSeconds is how long the oldest session of application name
// has been waiting on a lock in its current statement (server clock); -1
// when none waits.
func lockWaitSeconds(t *testing.T, pool *pgxpool.Pool, name string) float64 {
	var s float64
	err := pool.QueryRow(context.Background(), `SELECT coalesce(max(extract(epoch FROM clock_timestamp() - query_start)), -1)::float8
		FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, name).Scan(&s)
	if err != nil {
		t.Error(err) // from require.Eventually's goroutine: no FailNow
		return -1
	}
	return s
}

// TestClaimWaitsForACommittingTx: a Claim of a key an uncommitted
// DoTx holds waits for it up to LockTimeout, whichever order it sends its
// statements in (insert first: after its 1 ms insert gave up and the read
// saw no row, the second insert waits LockTimeout); when the DoTx commits
// its completed record within that, the Claim replays it instead of
// reporting the key pending: the fallback insert waits LockTimeout, not
// the first insert's 1 ms.
func TestClaimWaitsForACommittingTx(t *testing.T) {
	for _, o := range claimOrders {
		t.Run(o.name, func(t *testing.T) {
			ctx := context.Background()
			name := "wait-commit-" + randomSuffix()
			watch := newPool(t, nil)
			holderPool := newPool(t, nil)
			holder := newStore(t, holderPool)
			s, err := New(appPool(t, name, 2), &Config{Schema: testSchema, LockTimeout: time.Minute})
			require.NoError(t, err)
			pinOrder(s, o.insertFirst)
			scope := backendtest.Scope(t)
			tx, err := holderPool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			hp := claimParams(scope, "k")
			r, err := holder.InTx(tx).Claim(ctx, hp)
			require.NoError(t, err)
			require.True(t, r.Claimed)
			ok, err := holder.InTx(tx).Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: hp.Owner, Outcome: []byte("v"), Retention: time.Hour})
			require.NoError(t, err)
			require.True(t, ok)

			done := make(chan backends.ClaimResult, 1)
			go func() {
				r, err := s.Claim(ctx, claimParams(scope, "k"))
				if err != nil {
					t.Error(err)
				}
				done <- r
			}()
			var early *backends.ClaimResult
			require.Eventually(t, func() bool {
				select {
				case r := <-done:
					early = &r
					return true
				default:
				}
				return lockWaitSeconds(t, watch, name) >= 0.2
			}, 30*time.Second, 5*time.Millisecond)
			require.NoError(t, tx.Commit(ctx))
			if early == nil {
				r = <-done
			} else {
				r = *early
			}
			require.False(t, r.Claimed)
			require.Equal(t, backends.StateCompleted, r.Existing.State, "the Claim gave up before LockTimeout: %+v", r.Existing)
			require.Equal(t, []byte("v"), r.Existing.Outcome)
		})
	}
}
