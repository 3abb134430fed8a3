package postgres

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/goroutines"
)

// storeFrame matches a stack frame of the listener's code: a session's
// goroutine (run, its loop) or an idle timer's function.
var storeFrame = regexp.MustCompile(`(?m)^github\.com/stagedoor/once/backends/postgres\.\((\*session|\*listener)\)\.`)

// storeGoroutines returns the stacks, by goroutine id, of the goroutines
// running the store's waiting code (goroutines.Matching).
func storeGoroutines() map[string]string { return goroutines.Matching(storeFrame) }

// newGoroutines returns those of storeGoroutines not in before (other
// tests' stores may keep theirs for a while).
func newGoroutines(before map[string]string) []string { return goroutines.Since(before, storeFrame) }

// goneWithin bounds how long a goroutine of the listener may still exist
// after Close returned: Close waits until each has done its last work
// (the session's run, the idle timer's function), but a goroutine still
// exits after it signals that (its deferred Done), so a stack dump taken
// right after Close may show it returning. goneWithin is far below
// listenIdle (5 s), which a goroutine that Close did not end outlives.
const goneWithin = time.Second

// requireGoroutinesGone checks that no goroutine of the listener other
// than those in before is left, within goneWithin (as goleak retries).
func requireGoroutinesGone(t *testing.T, before map[string]string, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(goneWithin)
	for {
		added := newGoroutines(before)
		if len(added) == 0 {
			return
		}
		if time.Now().After(deadline) {
			require.Empty(t, added, msgAndArgs...)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func requireClosedError(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, backends.ErrClosed)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "watch", e.Op)
	require.Contains(t, e.Error(), "store closed")
}

// TestCloseEndsTheListener: Close wakes the waiter, closes the listening
// connection on the server and returns once no goroutine of the listener
// is left; a Watch after Close fails with ErrClosed, a second Close is a
// no-op, and the other methods keep working on the caller's pool.
func TestCloseEndsTheListener(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	s := newTable(t, pool, Config{})
	before := storeGoroutines()

	ch, stop, err := s.Watch(ctx, "s", "k")
	require.NoError(t, err)
	require.NotEmpty(t, newGoroutines(before), "the check sees the listener's goroutine")
	s.listen.mu.Lock()
	pid := s.listen.current.pid
	s.listen.mu.Unlock()
	require.NotZero(t, pid)

	require.NoError(t, s.Close())
	requireGoroutinesGone(t, before, "no goroutine of the store is left once Close returned")
	requireWoken(t, ch, "Close")
	stop() // after Close: a no-op
	require.Eventually(t, func() bool {
		var alive int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&alive))
		return alive == 0
	}, wakeWithin, 10*time.Millisecond, "the listening connection is closed on the server")

	_, _, err = s.Watch(ctx, "s", "k")
	requireClosedError(t, err)
	require.NoError(t, s.Close(), "a second Close")
	requireGoroutinesGone(t, before)

	owner := mustClaim(t, s, "s", "k")
	complete(t, s, "s", "k", owner)
}

// TestCloseInterruptsAConnectingWatch: a Watch waiting for the listening
// connection (the pool has none to lend) returns ErrClosed at Close,
// which returns once the connecting goroutine did.
func TestCloseInterruptsAConnectingWatch(t *testing.T) {
	pool := newPool(t, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
	ctx := context.Background()
	s := newTable(t, pool, Config{})
	held, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer held.Release()
	before := storeGoroutines()

	done := make(chan error, 1)
	go func() {
		_, _, err := s.Watch(ctx, "s", "k")
		done <- err
	}()
	require.Eventually(t, func() bool {
		s.listen.mu.Lock()
		defer s.listen.mu.Unlock()
		return s.listen.current != nil && s.listen.current.count == 1
	}, wakeWithin, time.Millisecond, "the Watch waits for a connection")
	select {
	case err := <-done:
		require.FailNow(t, "Watch returned without a connection", "%v", err)
	case <-time.After(50 * time.Millisecond):
	}

	start := time.Now()
	require.NoError(t, s.Close())
	require.Less(t, time.Since(start), listenTimeout, "Close does not wait for the connection attempt to time out")
	select {
	case err := <-done:
		requireClosedError(t, err)
	case <-time.After(wakeWithin):
		require.FailNow(t, "Close did not end the Watch")
	}
	requireGoroutinesGone(t, before)
}

// TestCloseConcurrentWithWatches: Close, twice and concurrently, while
// waiters keep watching and stopping: every Watch either returned a
// channel that Close closes, or an error that is ErrClosed, a slot held
// too long, or none other; no goroutine of the store is left.
func TestCloseConcurrentWithWatches(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	s := newTable(t, pool, Config{})
	before := storeGoroutines()
	_, stop, err := s.Watch(ctx, "s", "first") // the listener is up
	require.NoError(t, err)
	defer stop()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		open     []<-chan struct{}
		closedN  int
		unwanted []error
	)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				ch, stop, err := s.Watch(ctx, "s", "k"+strconv.Itoa(i*1000+j%50))
				mu.Lock()
				switch {
				case err == nil && j%2 == 0:
					stop()
				case err == nil:
					open = append(open, ch)
				case errors.Is(err, backends.ErrClosed):
					closedN++
				case strings.Contains(err.Error(), errSlotBusy.Error()):
				default:
					unwanted = append(unwanted, err)
				}
				mu.Unlock()
				if errors.Is(err, backends.ErrClosed) {
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	var closers sync.WaitGroup
	for range 2 {
		closers.Add(1)
		go func() {
			defer closers.Done()
			assert.NoError(t, s.Close())
		}()
	}
	closers.Wait()
	requireGoroutinesGone(t, before, "no goroutine of the store is left once Close returned")
	wg.Wait() // every watcher saw ErrClosed
	require.Empty(t, unwanted)
	require.Equal(t, 8, closedN, "every watching goroutine ended on ErrClosed")
	for _, ch := range open {
		select {
		case <-ch:
		default:
			require.FailNow(t, "a waiter was not woken by Close")
		}
	}
	requireGoroutinesGone(t, before)
}
