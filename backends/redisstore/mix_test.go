package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/internal/claimmix"
)

// TestClaimMixSwitches checks which commands a Claim sends: the pipeline
// (PTTL, SET NX GET) until claimmix.Start claims in a row created new
// keys, then the SET alone, and the pipeline again from the claim after
// one whose SET found a record: a replay then takes the SET and the
// pipeline once, and the next ones the pipeline alone. A re-sent claim
// that finds its own record still reports Claimed (claim.lua).
func TestClaimMixSwitches(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		singleClient(t) // skip or fail when the server is down
		c := redis.NewClient(&redis.Options{Addr: singleAddr()})
		t.Cleanup(func() { _ = c.Close() })
		claimMixSwitches(t, c)
	})
	t.Run("cluster", func(t *testing.T) {
		clusterClient(t) // skip or fail when the Cluster is down
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs()})
		t.Cleanup(func() { _ = c.Close() })
		claimMixSwitches(t, c)
	})
}

func claimMixSwitches(t *testing.T, c redis.UniversalClient) {
	n := &counter{}
	c.AddHook(n)
	s := newStore(t, c, nil)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	var r backends.ClaimResult
	sent := func(key, owner, fp string) []string {
		t.Helper()
		n.take()
		var err error
		r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Fingerprint: []byte(fp), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		// Leave out what go-redis sends on its own: a new connection's
		// HELLO and CLIENT SETINFO, a Cluster's slot map.
		return slices.DeleteFunc(n.take(), func(name string) bool {
			return name == "hello" || name == "client" || name == "cluster"
		})
	}
	pipeline := []string{"pttl", "set"}
	alone := []string{"set"}
	// fresh claims count new keys, each with the pipeline.
	fresh := func(what string, count int) {
		t.Helper()
		for i := range count {
			assert.Equal(t, pipeline, sent(what+strconv.Itoa(i), backendtest.Token(), "fp"), "%s: new key %d", what, i)
			require.True(t, r.Claimed)
		}
	}

	fresh("new", claimmix.Start)
	owner := backendtest.Token()
	assert.Equal(t, alone, sent("k", owner, "fp"), "the SET alone")
	require.True(t, r.Claimed)
	assert.Equal(t, append(alone, pipeline...), sent("k", backendtest.Token(), "fp"), "a duplicate among new keys")
	require.Equal(t, backends.StatePending, r.Existing.State)
	require.Positive(t, r.Existing.LeaseRemaining)
	assert.Equal(t, pipeline, sent("k", backendtest.Token(), "other"), "the next claim")
	require.Equal(t, []byte("fp"), r.Existing.Fingerprint)

	// A retry storm: two round trips for its first replay, one after.
	fresh("again", 2*claimmix.Rise) // the duplicate and the mismatch found the record
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, append(alone, pipeline...), sent("k", backendtest.Token(), "fp"), "first replay")
	require.Equal(t, []byte("v"), r.Existing.Outcome)
	require.Positive(t, r.Existing.ExpiresIn)
	for i := range 3 {
		assert.Equal(t, pipeline, sent("k", backendtest.Token(), "fp"), "replay %d", i+2)
		require.Equal(t, []byte("v"), r.Existing.Outcome)
	}

	// A claim whose SET alone was applied, sent again (as go-redis
	// re-sends it after a lost reply), finds its own record.
	fresh("own", 4*claimmix.Rise) // the four replays
	owner = backendtest.Token()
	assert.Equal(t, alone, sent("mine", owner, "fp"))
	require.True(t, r.Claimed)
	assert.Equal(t, append(append(alone, pipeline...), "evalsha"), sent("mine", owner, "fp"), "the re-sent claim")
	require.True(t, r.Claimed, "%+v", r)
	require.False(t, r.TookOver)
}
