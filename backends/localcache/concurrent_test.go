package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/internal/testservers"
)

// TestConcurrentOnEveryStore: goroutines hammer a few keys through a
// Keeper over the cache, with fn succeeding, failing retryably, holding
// (briefly), panicking, or outliving its caller's context, on memory,
// PostgreSQL and Redis. Each key's outcome is recorded once; every success
// any caller got is that outcome; no value is recorded twice.
func TestConcurrentOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			k := once.New(cached(t, store, localcache.Config{MaxEntries: 2, TTL: time.Minute}),
				once.WithLease(time.Second), once.WithHoldFor(5*time.Millisecond))
			plain := once.New(store, once.WithLease(time.Second)).Scope("c")
			scope := k.Scope("c")
			const keys, workers, calls = 6, 12, 60
			var recorded [keys]atomic.Int32
			var mu sync.Mutex
			answers := map[int][]int64{}
			var seq atomic.Int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 5))
					for range calls {
						ki := rng.IntN(keys)
						key := fmt.Sprintf("k%d", ki)
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(1+rng.IntN(40))*time.Millisecond)
						kind := rng.IntN(6)
						scope := scope
						if rng.IntN(3) == 0 {
							scope = scope.With(once.WithWait(50 * time.Millisecond))
						}
						func() {
							defer func() { _ = recover() }()
							out, err := once.DoOutcome(ctx, scope, key, once.Fingerprint("fp"), func(fctx context.Context) (int64, error) {
								v := seq.Add(1)
								switch kind {
								case 0:
									return 0, errors.New("retry")
								case 1:
									return 0, once.Hold(errors.New("timeout"))
								case 2:
									panic("fn panics")
								case 3:
									<-fctx.Done()
									time.Sleep(time.Millisecond)
									return v, nil // outlives its caller's context
								}
								return v, nil
							})
							if err == nil {
								mu.Lock()
								answers[ki] = append(answers[ki], out.Value)
								mu.Unlock()
								if out.Status == once.Recorded {
									recorded[ki].Add(1)
								}
							}
						}()
						cancel()
					}
				})
			}
			wg.Wait()
			for ki := range keys {
				require.LessOrEqual(t, recorded[ki].Load(), int32(1), "key %d recorded twice", ki)
				if len(answers[ki]) == 0 {
					continue
				}
				v, err := once.Do(context.Background(), plain, fmt.Sprintf("k%d", ki), once.Fingerprint("fp"), func(context.Context) (int64, error) {
					return -1, errors.New("ran again")
				})
				require.NoError(t, err, "key %d", ki)
				for _, a := range answers[ki] {
					require.Equal(t, v, a, "key %d: a caller got %d, the store holds %d", ki, a, v)
				}
			}
		})
	}
}
