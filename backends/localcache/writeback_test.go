package localcache_test

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
	"github.com/stagedoor/once/backends/localcache"
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
func TestEntryFromRetriedCompletionDoesNotOutliveTheRecord(t *testing.T) {
	ctx := context.Background()
	clock := &fakeNow{t: time.Unix(1_000_000, 0)}
	inner := memory.New(&memory.Config{Now: clock.now})
	store := &hookStore{Store: inner}
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
	k := once.New(cached(t, store, localcache.Config{MaxEntries: 8, TTL: time.Hour, Now: clock.now}),
		once.WithRetention(retention), once.WithLease(time.Hour))
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
	require.NotEqual(t, once.Replayed, out.Status, "the record expired in the store: the key is a new intent")
	require.Equal(t, int32(2), out.Value)
}

// aliasingCodec stores a []byte as is and decodes it without a copy, as a
// zero-copy codec may: the decoded value shares the bytes it was given.
type aliasingCodec struct{}

func (aliasingCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (aliasingCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = data
	return nil
}

// Each replay from the store decodes fresh bytes; a replay from the local
// cache must too, so that a caller that modifies its replayed value (legal:
// it is the caller's) does not change the answer later replays get.
func TestReplayDoesNotShareBytesBetweenCallers(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: memory.New(nil)}
	scope := once.New(cached(t, store, localcache.Config{MaxEntries: 8}), once.WithCodec(aliasingCodec{})).Scope("s")
	fn := func(context.Context) ([]byte, error) { return []byte("paid"), nil }

	_, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	first, err := once.DoOutcome(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	require.Equal(t, once.Replayed, first.Status)
	copy(first.Value, "XXXX") // the caller's own value
	second, err := once.DoOutcome(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	require.Equal(t, once.Replayed, second.Status)
	require.Equal(t, []byte("paid"), second.Value, "a replay is not changed by what another caller did to its value")
	require.Equal(t, int64(1), store.claims.Load(), "both replays came from the cache")
}

// Duplicates that join one store read of a completed record each decode
// their own bytes: with a zero-copy codec, one caller modifying its value
// changes neither another's value nor the cache (the race detector sees a
// shared buffer).
func TestJoinedDuplicatesDoNotShareBytes(t *testing.T) {
	const n = 8
	ctx := context.Background()
	mem := memory.New(nil)
	_, err := once.Do(ctx, once.New(mem, once.WithCodec(aliasingCodec{})).Scope("s"), "k", nil,
		func(context.Context) ([]byte, error) { return []byte("paid"), nil })
	require.NoError(t, err)
	cs := &countingStore{Store: mem, gate: make(chan struct{})}
	c := cached(t, cs, localcache.Config{MaxEntries: 8})
	scope := once.New(c, once.WithCodec(aliasingCodec{})).Scope("s")
	values := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := once.Do(ctx, scope, "k", nil, func(context.Context) ([]byte, error) { return nil, errors.New("ran") })
			if err == nil {
				v[0] = byte('A' + i) // the caller's own value
			}
			values[i] = v
		})
	}
	waitFor(t, func() bool { return localcache.Joined(c) == n-1 })
	close(cs.gate)
	wg.Wait()
	require.EqualValues(t, 1, cs.claims.Load(), "one store read for all")
	for i, v := range values {
		require.Equal(t, string(rune('A'+i))+"aid", string(v))
	}
	again, err := once.Do(ctx, scope, "k", nil, func(context.Context) ([]byte, error) { return nil, errors.New("ran") })
	require.NoError(t, err)
	require.Equal(t, "paid", string(again))
}

// The first caller owns what Do returns and what it passed: with a
// zero-copy codec its value aliases the encoded outcome that went to the
// store and to the local cache, and its fingerprint buffer is free for
// reuse once Do returns. Modifying either changes neither the cached
// record nor the stored one.
func TestFirstCallerOwnsItsBytes(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: memory.New(nil)}
	scope := once.New(cached(t, store, localcache.Config{MaxEntries: 8}), once.WithCodec(aliasingCodec{})).Scope("s")
	fp := once.Fingerprint("fingerprint")
	first, err := once.DoOutcome(ctx, scope, "k", fp, func(context.Context) ([]byte, error) { return []byte("paid"), nil })
	require.NoError(t, err)
	require.NotEqual(t, once.Replayed, first.Status)
	copy(first.Value, "XXXX") // the caller's own value
	copy(fp, "XXXXXXXXXXX")   // and its own fingerprint buffer

	ran := func(context.Context) ([]byte, error) { return nil, errors.New("ran") }
	cached, err := once.DoOutcome(ctx, scope, "k", once.Fingerprint("fingerprint"), ran)
	require.NoError(t, err, "the cached record keeps the fingerprint it was claimed with")
	require.Equal(t, once.Replayed, cached.Status)
	require.Equal(t, []byte("paid"), cached.Value)
	require.Equal(t, int64(1), store.claims.Load(), "the replay came from the cache")

	stored, err := once.DoOutcome(ctx, once.New(store.Store, once.WithCodec(aliasingCodec{})).Scope("s"), "k", once.Fingerprint("fingerprint"), ran)
	require.NoError(t, err, "the stored record keeps the fingerprint it was claimed with")
	require.Equal(t, once.Replayed, stored.Status)
	require.Equal(t, []byte("paid"), stored.Value)
}
