package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCloseWhileIdle: Close while the listener is idle (its last waiter
// left, the idle timer pending) returns at once, without waiting for the
// timer, and leaves no goroutine; and Close racing the idle timer's fire
// (a timer of a few microseconds) neither hangs nor leaves one.
func TestCloseWhileIdle(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	for _, idle := range []time.Duration{time.Hour, 0, time.Microsecond, 50 * time.Microsecond, time.Millisecond} {
		for range 10 {
			s := newTable(t, pool, Config{})
			s.listen.idle = idle
			before := storeGoroutines()
			_, stop, err := s.Watch(ctx, "s", "k")
			require.NoError(t, err)
			stop() // the idle timer starts
			done := make(chan struct{})
			go func() {
				defer close(done)
				require.NoError(t, s.Close())
			}()
			select {
			case <-done:
			case <-time.After(wakeWithin):
				require.FailNow(t, "Close hangs on an idle listener", "idle %v", idle)
			}
			requireGoroutinesGone(t, before, "idle %v", idle)
		}
	}
}
