package sqlitestore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// claimWithSteps claims key with a fresh owner and checkpoints steps,
// returning the owner.
func claimWithSteps(t *testing.T, s backends.Store, scope, key string, steps []byte, lease, retention time.Duration) string {
	t.Helper()
	owner := backendtest.Token()
	r, err := s.Claim(t.Context(), backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: lease, Retention: retention})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Checkpoint(t.Context(), backends.CheckpointParams{Scope: scope, Key: key, Owner: owner, Steps: steps})
	require.NoError(t, err)
	require.True(t, ok)
	return owner
}

// TestReleaseWithStepsWakesWatchers checks that a Release that keeps the
// record for its checkpoints wakes the key's watchers, as a delete does:
// a waiting duplicate may take the record over at once.
func TestReleaseWithStepsWakesWatchers(t *testing.T) {
	s := openStore(t, tempDB(t), nil)
	scope := backendtest.Scope(t)
	owner := claimWithSteps(t, s, scope, "k", []byte("steps"), time.Hour, time.Hour)
	changed, stop, err := s.Watch(t.Context(), scope, "k")
	require.NoError(t, err)
	defer stop()
	ok, err := s.Release(t.Context(), backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
	require.NoError(t, err)
	require.True(t, ok)
	select {
	case <-changed:
	default:
		t.Fatal("the release did not wake the watcher")
	}
	rec, err := s.Get(t.Context(), scope, "k")
	require.NoError(t, err)
	require.Equal(t, backends.StatePending, rec.State, "kept")
	require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "its lease ended")
	require.Equal(t, []byte("steps"), rec.Steps)
}

// TestStepsThroughResolve checks that Resolve keeps the checkpoints of the
// record it completes, and that a Resolve of an expired record, which
// replaces it, starts without them.
func TestStepsThroughResolve(t *testing.T) {
	s := openStore(t, tempDB(t), nil)
	scope, steps := backendtest.Scope(t), []byte("steps")
	claimWithSteps(t, s, scope, "lapsed", steps, time.Millisecond, time.Hour)
	claimWithSteps(t, s, scope, "expired", steps, time.Millisecond, 300*time.Millisecond)
	backendtest.Elapse(t, s, 300*time.Millisecond)
	for _, key := range []string{"lapsed", "expired"} {
		r, err := s.Resolve(t.Context(), backends.ResolveParams{Scope: scope, Key: key, Owner: backendtest.Token(), Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Resolved, "%s: %+v", key, r)
	}
	rec, err := s.Get(t.Context(), scope, "lapsed")
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, rec.State)
	require.Equal(t, steps, rec.Steps, "Resolve keeps the record's checkpoints")
	rec, err = s.Get(t.Context(), scope, "expired")
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, rec.State)
	require.Nil(t, rec.Steps, "an expired record's checkpoints die with it")
}

// TestCheckpointInTx checks that a checkpoint written through the store
// bound to a transaction commits with it, or not at all.
func TestCheckpointInTx(t *testing.T) {
	s := openStore(t, tempDB(t), nil)
	ctx := t.Context()
	scope := backendtest.Scope(t)
	owner := claimWithSteps(t, s, scope, "k", []byte("first"), time.Hour, time.Hour)
	checkpointInTx := func(steps string, commit bool) {
		tx, ts, err := s.BeginTx(ctx)
		require.NoError(t, err)
		ok, err := ts.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "k", Owner: owner, Steps: []byte(steps)})
		require.NoError(t, err)
		require.True(t, ok)
		if commit {
			require.NoError(t, tx.Commit(ctx))
		} else {
			require.NoError(t, tx.Rollback(ctx))
		}
	}
	steps := func() []byte {
		rec, err := s.Get(ctx, scope, "k")
		require.NoError(t, err)
		return rec.Steps
	}
	checkpointInTx("committed", true)
	require.Equal(t, []byte("committed"), steps())
	checkpointInTx("rolled back", false)
	require.Equal(t, []byte("committed"), steps(), "a rolled-back checkpoint leaves none of its bytes")
}
