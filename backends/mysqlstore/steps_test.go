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
