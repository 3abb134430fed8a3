package sqlitestore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
)

// storeClock is a settable clock for the Store (Config.Now).
type storeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *storeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *storeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A Claim that finds a completed record reports the time it has left by
// the store's clock, to the microsecond the file stores.
func TestClaimReportsExpiresIn(t *testing.T) {
	ctx := context.Background()
	clock := &storeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	s := openStore(t, tempDB(t), &Config{Now: clock.Now})
	res, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Minute})
	require.NoError(t, err)
	require.True(t, res.Claimed)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: "o", Outcome: []byte("v"), Retention: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	clock.Advance(20 * time.Second)
	res, err = s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "p", Lease: time.Minute, Retention: time.Minute})
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, res.Existing.State)
	require.Equal(t, 40*time.Second, res.Existing.ExpiresIn)
}

// A local cache (package localcache) never serves a record read from
// SQLite after the record expired there, however long the cache's TTL and
// the Keeper's retention: the entry lives at most the time the store
// reported left. The store and the cache run on one fake clock, set so
// that the record has 50 ms left when the cache reads it.
func TestLocalCacheNeverOutlivesTheRecord(t *testing.T) {
	ctx := context.Background()
	clock := &storeClock{now: time.Now()}
	s := openStore(t, tempDB(t), &Config{Now: clock.Now})
	writer := once.New(s, once.WithRetention(time.Hour)).Scope("s")
	_, err := once.Do(ctx, writer, "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	clock.Advance(time.Hour - 50*time.Millisecond)

	cs := &claimCounter{Store: s}
	cached, err := localcache.New(cs, &localcache.Config{TTL: time.Hour, Now: clock.Now})
	require.NoError(t, err)
	scope := once.New(cached, once.WithRetention(time.Hour)).Scope("s")
	var runs atomic.Int64
	fn := func(context.Context) (int, error) { runs.Add(1); return 2, nil }
	for range 3 {
		v, err := once.Do(ctx, scope, "k", nil, fn)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	require.EqualValues(t, 1, cs.claims.Load(), "replays answered from the cache")

	clock.Advance(50 * time.Millisecond) // the record expired in the store
	v, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	require.Equal(t, 2, v, "a new intent: the expired record is not served from the cache")
	require.EqualValues(t, 1, runs.Load())
}

// claimCounter counts the Claims that reach the store.
type claimCounter struct {
	*Store
	claims atomic.Int64
}

func (c *claimCounter) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, p)
}
