package mysqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestStepsRoundTrips counts the commands of the checkpoint operations in
// each claim form: Checkpoint is one; a re-sent claim returns the
// checkpoints in the round trips of any other answer (existing), and a
// takeover in those of a takeover without them (takeover); Release is one
// for a record without checkpoints and two for one with them.
func TestStepsRoundTrips(t *testing.T) {
	t.Run("insert-first", func(t *testing.T) { testStepsRoundTrips(t, Config{}, 2, 3) })
	t.Run("read-first", func(t *testing.T) { testStepsRoundTrips(t, Config{ReadFirstClaims: true}, 1, 2) })
	t.Run("procedure", func(t *testing.T) { testStepsRoundTrips(t, Config{OneRoundTripClaims: true}, 1, 1) })
}

func testStepsRoundTrips(t *testing.T, cfg Config, existing, takeover int64) {
	c := &counter{}
	db := newDB(t, func(cfg *mysql.Config) { cfg.DialFunc = c.dial })
	db.SetMaxOpenConns(1)
	s := newStore(t, db, cfg)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	steps := []byte("step 1\x00\xff")
	claim := func(key, owner string) backends.ClaimResult {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Fingerprint: []byte("fp"), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		return r
	}
	checkpoint := func(key, owner string) bool {
		ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: key, Owner: owner, Steps: steps})
		require.NoError(t, err)
		return ok
	}
	release := func(key, owner string) bool {
		ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: key, Owner: owner})
		require.NoError(t, err)
		return ok
	}
	// Warm up: prepare every statement on the one connection.
	claim("warm", "w")
	claim("warm", "w")
	checkpoint("warm", "w")
	release("warm", "w")
	claim("warm", "w2") // a takeover
	release("warm", "w2")

	claim("k", "o1")
	require.EqualValues(t, 1, c.count(func() { require.True(t, checkpoint("k", "o1")) }), "checkpoint")
	var r backends.ClaimResult
	require.EqualValues(t, existing, c.count(func() { r = claim("k", "o1") }), "a re-sent claim")
	require.Equal(t, backends.ClaimResult{Claimed: true, Steps: steps}, r)
	require.EqualValues(t, 2, c.count(func() { require.True(t, release("k", "o1")) }), "release with checkpoints")
	require.EqualValues(t, takeover, c.count(func() { r = claim("k", "o2") }), "a takeover")
	require.Equal(t, backends.ClaimResult{Claimed: true, TookOver: true, Steps: steps}, r)
	require.EqualValues(t, 2, c.count(func() { require.False(t, release("k", "o1")) }), "a stale release")
	claim("plain", "o3")
	require.EqualValues(t, 1, c.count(func() { require.True(t, release("plain", "o3")) }), "release without checkpoints")
}

// TestStepsThroughResolve checks that Resolve keeps the checkpoints of the
// record it completes, and that a Resolve of an expired record, which
// replaces it, starts without them.
func TestStepsThroughResolve(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	ctx := t.Context()
	scope := backendtest.Scope(t)
	steps := []byte("steps")
	claimWithSteps := func(key string, lease, retention time.Duration) {
		owner := backendtest.Token()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: lease, Retention: retention})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: key, Owner: owner, Steps: steps})
		require.NoError(t, err)
		require.True(t, ok)
	}
	resolve := func(key string) {
		r, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Owner: backendtest.Token(), Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Resolved, "%+v", r)
	}
	claimWithSteps("lapsed", time.Millisecond, time.Hour)
	claimWithSteps("expired", time.Millisecond, 300*time.Millisecond)
	backendtest.Elapse(t, s, 300*time.Millisecond)
	resolve("lapsed")
	resolve("expired")

	rec, err := s.Get(ctx, scope, "lapsed")
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, rec.State)
	require.Equal(t, steps, rec.Steps, "Resolve keeps the record's checkpoints")
	rec, err = s.Get(ctx, scope, "expired")
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, rec.State)
	require.Nil(t, rec.Steps, "an expired record's checkpoints die with it")
}

// TestCheckpointInTx checks that a checkpoint written through a store
// bound to a transaction commits with it, or not at all.
func TestCheckpointInTx(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	ctx := t.Context()
	scope, owner := backendtest.Scope(t), backendtest.Token()
	_, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
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
