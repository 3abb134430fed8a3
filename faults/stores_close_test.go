package faults

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/goroutines"
)

// storeFrames matches a frame of the stores' Watch code: PostgreSQL's
// listener sessions, Redis's subscribers.
var storeFrames = regexp.MustCompile(`(?m)^github\.com/stagedoor/once/backends/(postgres\.\(\*(session|listener)\)|redisstore\.\((\*subscriber|\*subscribers)\))\.`)

// openedStore.close closes the PostgreSQL and Redis stores themselves
// (their Watch connection and its goroutines), not only the pool or client
// behind them: a waiter left watching is woken, a later Watch returns
// backends.ErrClosed, and none of the store's goroutines is left (without
// the store's Close they stay up to 5 s after the last waiter).
func TestOpenedStoreCloseClosesTheStore(t *testing.T) {
	for _, backend := range []string{"postgres", "redis"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			spec := testSpec(t, backend, "faults_close_")
			before := goroutines.Matching(storeFrames)
			st, err := spec.open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			w := st.store.(backends.Watcher)
			woken, stop, err := w.Watch(ctx, "close", "k")
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer stop()
			st.close()
			select {
			case <-woken:
			default:
				t.Errorf("close did not wake the waiter left watching")
			}
			if _, _, err := w.Watch(ctx, "close", "k"); !errors.Is(err, backends.ErrClosed) {
				t.Errorf("Watch after close: %v, want backends.ErrClosed", err)
			}
			// Redis's are gone once Close returned (see
			// redisstore.Store.Close); PostgreSQL's may still be returning
			// (see postgres.Store.Close): a brief retry for them, as
			// goleak's, well under the 5 s they would live without it.
			left := goroutines.Since(before, storeFrames)
			for i := 0; backend == "postgres" && len(left) > 0 && i < 20; i++ {
				time.Sleep(50 * time.Millisecond)
				left = goroutines.Since(before, storeFrames)
			}
			if len(left) > 0 {
				t.Errorf("%d goroutines of the store left after close: %v", len(left), left)
			}
		})
	}
}
