package localcache_test

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
	"github.com/stagedoor/once/backends/memory"
)

// countingStore counts the Claims and Completes that reach the store
// under the cache and, when gate is set, holds each Claim until gate is
// closed or the call's context ends.
type countingStore struct {
	backends.Store
	claims    atomic.Int64
	completes atomic.Int64
	gate      chan struct{}
}

// Unwrap makes countingStore a decorator: backends.As finds the store's
// optional interfaces (Admin, for one) through it.
func (s *countingStore) Unwrap() backends.Store { return s.Store }

func (s *countingStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	s.claims.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return backends.ClaimResult{}, ctx.Err()
		}
	}
	return s.Store.Claim(ctx, p)
}

func (s *countingStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	s.completes.Add(1)
	return s.Store.Complete(ctx, p)
}

func cacheFP(s string) once.Fingerprint { return once.Fingerprint(s) }

// fakeClock is one settable clock for the store and the cache.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// cached returns store behind a local cache configured by cfg.
func cached(t testing.TB, store backends.Store, cfg localcache.Config) backends.Store {
	t.Helper()
	s, err := localcache.New(store, &cfg)
	require.NoError(t, err)
	return s
}

// world is a Keeper over a local cache over a counting memory store, all
// on one fake clock.
type world struct {
	keeper *once.Keeper
	cached backends.Store // the cache, the Keeper's store
	count  *countingStore // under the cache
	mem    *memory.Store  // under the counter
}

func newWorld(t testing.TB, clock *fakeClock, cfg localcache.Config, opts ...once.Option) world {
	mem := memory.New(&memory.Config{Now: clock.Now})
	cs := &countingStore{Store: mem}
	cfg.Now = clock.Now
	c := cached(t, cs, cfg)
	return world{keeper: once.New(c, opts...), cached: c, count: cs, mem: mem}
}

func countRuns(runs *atomic.Int64, v int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		runs.Add(1)
		return v, nil
	}
}

// waitJoined blocks until n Claims have joined a Claim in flight.
func waitJoined(t *testing.T, store backends.Store, n int64) {
	t.Helper()
	waitFor(t, func() bool { return localcache.Joined(store) >= n })
}

// waitFor polls cond; it fails the test, instead of hanging it, when cond
// stays false for a minute (a synchronisation guard, not a timing check).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			require.FailNow(t, "condition never held")
		}
	}
}

// hookStore runs claim and complete, when set, in place of the store's.
// It is a decorator too: backends.As finds the store's optional
// interfaces through it.
type hookStore struct {
	backends.Store
	claim    func(context.Context, backends.ClaimParams) (backends.ClaimResult, error)
	complete func(context.Context, backends.CompleteParams) (bool, error)
}

func (s *hookStore) Unwrap() backends.Store { return s.Store }

func (s *hookStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if s.claim != nil {
		return s.claim(ctx, p)
	}
	return s.Store.Claim(ctx, p)
}

func (s *hookStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	if s.complete != nil {
		return s.complete(ctx, p)
	}
	return s.Store.Complete(ctx, p)
}
