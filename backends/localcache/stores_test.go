package localcache_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/internal/testservers"
)

// TestOnEveryStore checks the cache over the real servers: the
// first claims of 32 concurrent duplicates are one store call (31 join it),
// fn runs once and every waiting duplicate gets its outcome, hot replays
// make no store call, and a mismatching fingerprint gets ErrKeyReused.
func TestOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			cs := &countingStore{Store: newStore(t), gate: make(chan struct{})}
			c := cached(t, cs, localcache.Config{MaxEntries: 64})
			w := world{keeper: once.New(c, once.WithWait(20*time.Second)), cached: c, count: cs}
			scope := w.keeper.Scope("cache-" + testservers.Suffix())
			var runs atomic.Int64
			errs := runDuplicates(t, 32, w, scope, cacheFP("a"), countRuns(&runs, 5), 31)
			for _, err := range errs {
				require.NoError(t, err)
			}
			require.EqualValues(t, 1, runs.Load())
			claims := cs.claims.Load()
			for range 50 {
				out, err := once.DoOutcome(context.Background(), scope, "k", cacheFP("a"), countRuns(&runs, 6))
				require.NoError(t, err)
				require.Equal(t, once.Outcome[int]{Value: 5, Status: once.Replayed}, out)
			}
			_, err := once.Do(context.Background(), scope, "k", cacheFP("b"), countRuns(&runs, 7))
			require.ErrorIs(t, err, once.ErrKeyReused)
			require.Equal(t, claims, cs.claims.Load(), "answered from the cache")
			require.EqualValues(t, 1, runs.Load())
		})
	}
}

// The cache keys (scope, key) as a pair, as the stores do: scope "a:b"
// with key "c" and scope "a" with key "b:c" are two intents, each
// replaying its own answer from the cache.
func TestScopeAndKeyNeverCollide(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			k := once.New(cached(t, newStore(t), localcache.Config{MaxEntries: 64}))
			prefix := "col-" + testservers.Suffix()
			ab, a := k.Scope(prefix+":b"), k.Scope(prefix)
			first, err := once.Do(ctx, ab, "c", nil, func(context.Context) (string, error) { return "ab+c", nil })
			require.NoError(t, err)
			require.Equal(t, "ab+c", first)
			out, err := once.DoOutcome(ctx, a, "b:c", nil, func(context.Context) (string, error) { return "a+bc", nil })
			require.NoError(t, err)
			require.Equal(t, once.Outcome[string]{Value: "a+bc", Status: once.Recorded}, out, "a first execution, not the other intent's answer")
			for range 3 {
				v, err := once.Do(ctx, ab, "c", nil, func(context.Context) (string, error) { return "ran again", nil })
				require.NoError(t, err)
				require.Equal(t, "ab+c", v)
				v, err = once.Do(ctx, a, "b:c", nil, func(context.Context) (string, error) { return "ran again", nil })
				require.NoError(t, err)
				require.Equal(t, "a+bc", v)
			}
		})
	}
}
