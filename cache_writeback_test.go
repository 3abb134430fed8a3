package once_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// fakeNow is one settable clock for the store and the cache.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeNow) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeNow) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// A completion whose reply is lost lands at the first attempt; the retry
// only confirms it. The cached record must expire with the store's record
// (retention from the first attempt), not retention from the retry: else
// the cache replays an outcome the store no longer holds, and a new intent
// with the key gets the old answer instead of running fn.
func TestLocalCacheEntryFromRetriedCompletionDoesNotOutliveTheRecord(t *testing.T) {
	ctx := context.Background()
	clock := &fakeNow{t: time.Unix(1_000_000, 0)}
	inner := memory.New(&memory.Config{Now: clock.now})
	store := newFaultStore(inner)
	var attempts atomic.Int32
	store.complete = func(ctx context.Context, p backends.CompleteParams) (bool, error) {
		applied, err := inner.Complete(ctx, p)
		if attempts.Add(1) == 1 {
			clock.add(500 * time.Millisecond) // the lost reply takes its time
			return false, errors.New("reply lost")
		}
		return applied, err
	}
	const retention = time.Second
	k := once.New(store, once.WithRetention(retention), once.WithLease(time.Hour),
		once.WithLocalCache(once.LocalCacheWithClock(once.LocalCache{MaxEntries: 8, TTL: time.Hour}, clock.now)))
	scope := k.Scope("s")
	var runs atomic.Int32
	fn := func(context.Context) (int32, error) { return runs.Add(1), nil }

	v, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	require.Equal(t, int32(1), v)
	require.Equal(t, int32(2), attempts.Load(), "the retry confirmed the completion")

	clock.add(retention - 500*time.Millisecond + time.Millisecond) // past the store record's expiry
	out, err := once.DoOutcome(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	require.False(t, out.Replayed, "the record expired in the store: the key is a new intent")
	require.Equal(t, int32(2), out.Value)
}
