package localcache_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/backends/memory"
)

// fillKey marks the context of the one call pendingUntilFill lets through.
type fillKey struct{}

// pendingUntilFill answers every Claim with a live pending record, except
// a Claim whose context carries fillKey, which reaches the store.
type pendingUntilFill struct {
	backends.Store
	held atomic.Int64 // Claims answered pending
}

func (s *pendingUntilFill) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if ctx.Value(fillKey{}) != nil {
		return s.Store.Claim(ctx, p)
	}
	s.held.Add(1)
	return backends.ClaimResult{Existing: backends.Record{State: backends.StatePending, Fingerprint: bytes.Clone(p.Fingerprint), LeaseRemaining: time.Hour}}, nil
}

// A call waiting for a duplicate (WithWait) asks the cache again after
// each wait (each round's Claim): once another call of the process
// completed the key, the waiter replays that outcome from the cache,
// although the store would still answer it pending (no store Claim could
// end its wait).
func TestAnswersTheRoundAfterAWait(t *testing.T) {
	st := &pendingUntilFill{Store: memory.New(nil)}
	scope := once.New(cached(t, st, localcache.Config{MaxEntries: 8}), once.WithWait(30*time.Second)).Scope("s")
	ctx := context.Background()
	fp := cacheFP("a")
	type result struct {
		v   int
		err error
	}
	waited := make(chan result, 1)
	go func() {
		v, err := once.Do(ctx, scope, "k", fp, func(context.Context) (int, error) { return -1, nil })
		waited <- result{v, err}
	}()
	waitFor(t, func() bool { return st.held.Load() >= 1 }) // the waiter is waiting
	v, err := once.Do(context.WithValue(ctx, fillKey{}, true), scope, "k", fp, func(context.Context) (int, error) { return 7, nil })
	require.NoError(t, err)
	require.Equal(t, 7, v)
	r := <-waited
	require.NoError(t, r.err, "the waiter replays the completion the cache holds")
	require.Equal(t, 7, r.v)
}
