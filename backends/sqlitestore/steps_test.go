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
