package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
)

// A cancellation storm: many Do calls on a few hot keys, each with a
// context cancelled at a random point (before the claim, in the claim, in
// fn, while waiting for a duplicate), then no goroutine may be left behind
// and no key may stay in progress past lease + slack.
func TestNoGoroutineLeakAfterCancellationStorm(t *testing.T) {
	for _, backend := range []string{"memory", "postgres", "redis", "mysql", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			var spec storeSpec
			var st *openedStore
			if backend == "memory" {
				st = &openedStore{store: memory.New(nil)}
			} else {
				spec = testSpec(t, backend, "faults_leak_")
			}
			opts := []goleak.Option{goleak.IgnoreCurrent()}
			if st == nil {
				var err error
				if st, err = spec.open(ctx); err != nil {
					t.Fatal(err)
				}
			}
			lease := 500 * time.Millisecond
			scope := once.New(st.store, once.WithLease(lease)).Scope("storm")
			const calls = 400
			var wg sync.WaitGroup
			for i := range calls {
				key := fmt.Sprintf("hot-%d", i%16)
				s := scope
				if i%3 == 0 {
					s = scope.With(once.WithWait(200 * time.Millisecond))
				}
				cctx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(30))*time.Millisecond)
				wg.Go(func() {
					defer cancel()
					_, _ = once.Do(cctx, s, key, nil, func(ctx context.Context) (int, error) {
						select {
						case <-ctx.Done():
							return 0, ctx.Err()
						case <-time.After(time.Duration(rand.IntN(20)) * time.Millisecond):
							return i, nil
						}
					})
				})
			}
			wg.Wait()
			// No key in progress past lease + slack.
			time.Sleep(lease + 500*time.Millisecond)
			stuck := 0
			for k := range 16 {
				_, err := once.Do(ctx, scope, fmt.Sprintf("hot-%d", k), nil, func(context.Context) (int, error) { return -1, nil })
				if errors.Is(err, once.ErrInProgress) {
					stuck++
				} else if err != nil {
					t.Errorf("hot-%d: %v", k, err)
				}
			}
			if stuck > 0 {
				t.Errorf("%d keys in progress past lease + slack", stuck)
			}
			// The stores that keep a connection for waiters (PostgreSQL's
			// listener, Redis's Pub/Sub subscriber) end it and wait for its
			// goroutines in Close; without it they live 5 s after the last
			// waiter. The storm's waiters rarely still use it here, so a
			// waiter left watching at shutdown makes sure it is up; Close
			// wakes it.
			var closer interface{ Close() error }
			switch s := st.store.(type) {
			case *postgres.Store:
				closer = s
			case *redisstore.Store:
				closer = s
			}
			if closer != nil {
				left, _, err := st.store.(backends.Watcher).Watch(ctx, "storm", "hot-0")
				if err != nil {
					t.Fatalf("watch: %v", err)
				}
				if err := closer.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				select {
				case <-left:
				default:
					t.Errorf("Close did not wake the waiter left watching")
				}
			}
			st.close()
			// goleak.Find retries for under half a second, which covers the
			// drivers' background goroutines that end just after their pool
			// or client is closed; the stores' own are gone once Close
			// returned.
			leak := goleak.Find(opts...)
			if leak != nil {
				t.Errorf("goroutines left after the storm: %v", leak)
			}
			summary.note("cancellation storm on %s: %d Do calls on 16 hot keys, contexts cancelled at 0-30 ms, a third of them waiting for duplicates: stuck keys %d, goroutines leaked: %v", backend, calls, stuck, leak != nil)
		})
	}
}
