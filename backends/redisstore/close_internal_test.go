package redisstore

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/goroutines"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// wakeWithin bounds how long a test waits for what Close causes on the
// server or in another goroutine.
const wakeWithin = 10 * time.Second

// storeFrame matches a stack frame of the subscribers' code: a loop
// goroutine, an idle timer's function, a goroutine failing a connection.
var storeFrame = regexp.MustCompile(`(?m)^github\.com/stagedoor/once/backends/redisstore\.\((\*subscriber|\*subscribers)\)\.`)

// storeGoroutines returns the stacks, by goroutine id, of the goroutines
// running the store's waiting code (goroutines.Matching).
func storeGoroutines() map[string]string { return goroutines.Matching(storeFrame) }

// newGoroutines returns those of storeGoroutines not in before (other
// tests' stores may keep theirs for a while).
func newGoroutines(before map[string]string) []string { return goroutines.Since(before, storeFrame) }

// closeClient returns a client named name on the single node or, when
// cluster, the Cluster, or skips (fails when servers are required).
func closeClient(t *testing.T, cluster bool, name string) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	var err error
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	where := serverenv.RedisAddr()
	if cluster {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: serverenv.RedisClusterAddrs(), ClientName: name})
		c, where = cc, "redis cluster at "+strings.Join(serverenv.RedisClusterAddrs(), ",")
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() })
	} else {
		c = redis.NewClient(&redis.Options{Addr: where, ClientName: name})
		err = c.Ping(ctx).Err()
	}
	t.Cleanup(func() { _ = c.Close() })
	if err != nil {
		if serverenv.Required() {
			t.Fatalf("%s: %v", where, err)
		}
		t.Skipf("%s: %v", where, err)
	}
	return c
}

func closeStore(t *testing.T, c redis.UniversalClient) *Store {
	t.Helper()
	s, err := New(t.Context(), c, &Config{KeyPrefix: "oncetest-close:", EvictionPolicyCheck: EvictionIgnore})
	require.NoError(t, err)
	return s
}

// pubSubConns counts the Pub/Sub connections named name on every primary.
func pubSubConns(t *testing.T, c redis.UniversalClient, name string) int {
	t.Helper()
	count := 0
	var mu sync.Mutex
	one := func(ctx context.Context, n *redis.Client) error {
		list, err := n.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, " name="+name+" ") && strings.Contains(line, " flags=P") {
				count++
			}
		}
		return nil
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		require.NoError(t, cc.ForEachMaster(t.Context(), one))
	} else {
		require.NoError(t, one(t.Context(), c.(*redis.Client)))
	}
	return count
}

func uniqueName(prefix string) string {
	return prefix + strings.ReplaceAll(backendtest.Token()[:12], "-", "")
}

func requireClosedError(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, backends.ErrClosed)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "watch", e.Op)
	require.Equal(t, backends.ErrClosed, e.Kind)
	require.Equal(t, "once/redisstore: watch: once: store closed", e.Error())
}

func requireWoken(t *testing.T, ch <-chan struct{}, by string) {
	t.Helper()
	select {
	case <-ch:
	default:
		require.FailNow(t, "the waiter was not woken by "+by)
	}
}

// TestCloseEndsTheSubscribers: Close wakes the waiters, closes the
// store's Pub/Sub connections (one per primary on a Cluster) and returns
// once no goroutine of them is left; a Watch after Close fails with an
// *Error of kind ErrClosed, a second Close is a no-op, and the client and
// the other methods keep working.
func TestCloseEndsTheSubscribers(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "single", true: "cluster"}[cluster], func(t *testing.T) {
			name := uniqueName("onceclose")
			c := closeClient(t, cluster, name)
			s := closeStore(t, c)
			scope, ctx := backendtest.Scope(t), t.Context()
			before := storeGoroutines()

			// Keys spread over the slots, so over every primary of a Cluster.
			var chans []<-chan struct{}
			for i := range 16 {
				ch, stop, err := s.Watch(ctx, scope, "k"+strconv.Itoa(i))
				require.NoError(t, err)
				defer stop()
				chans = append(chans, ch)
			}
			// One more, stopped: it leaves nothing to watch on its
			// connection but the others; a lone one would arm the idle
			// timer, which Close stops.
			_, stop, err := s.Watch(ctx, scope, "stopped")
			require.NoError(t, err)
			stop()
			require.NotEmpty(t, newGoroutines(before), "the check sees the subscribers' goroutines")
			require.NotZero(t, pubSubConns(t, c, name))

			require.NoError(t, s.Close())
			require.Empty(t, newGoroutines(before), "no goroutine of the store is left once Close returned")
			for _, ch := range chans {
				requireWoken(t, ch, "Close")
			}
			require.Eventually(t, func() bool { return pubSubConns(t, c, name) == 0 },
				wakeWithin, 10*time.Millisecond, "the Pub/Sub connections are closed on the server")

			_, _, err = s.Watch(ctx, scope, "k0")
			requireClosedError(t, err)
			require.NoError(t, s.Close(), "a second Close")
			require.Empty(t, newGoroutines(before))

			require.NoError(t, c.Ping(ctx).Err(), "the client is not closed")
			owner := backendtest.Token()
			r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k0", Owner: owner, Lease: time.Minute, Retention: time.Minute})
			require.NoError(t, err)
			require.True(t, r.Claimed)
			ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k0", Owner: owner, Outcome: []byte("v"), Retention: time.Minute})
			require.NoError(t, err)
			require.True(t, ok)
			_, err = s.Delete(ctx, scope, "k0")
			require.NoError(t, err)
		})
	}
}

// TestCloseStopsTheIdleTimer: a store whose last waiter left keeps its
// connection for subscriberIdle behind an idle timer; Close closes it at
// once, and the timer counts no more (a Close after it returns at once,
// and a timer function run later would find nothing to do).
func TestCloseStopsTheIdleTimer(t *testing.T) {
	name := uniqueName("oncecloseidle")
	c := closeClient(t, false, name)
	s := closeStore(t, c)
	before := storeGoroutines()
	_, stop, err := s.Watch(t.Context(), backendtest.Scope(t), "k")
	require.NoError(t, err)
	stop()
	s.subs.mu.Lock()
	sc := s.subs.conns[""]
	s.subs.mu.Unlock()
	require.NotNil(t, sc)
	require.Eventually(t, func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return sc.idle != nil
	}, wakeWithin, time.Millisecond, "the idle timer is armed")

	start := time.Now()
	require.NoError(t, s.Close())
	require.Less(t, time.Since(start), subscriberIdle, "Close does not wait for the idle timer to fire")
	require.Empty(t, newGoroutines(before))
	require.True(t, sc.dead.Load())
	sc.mu.Lock()
	require.Nil(t, sc.idle, "Close stopped the timer")
	sc.mu.Unlock()
	require.Eventually(t, func() bool { return pubSubConns(t, c, name) == 0 },
		wakeWithin, 10*time.Millisecond, "the Pub/Sub connection is closed on the server")
}

// TestCloseInterruptsAWatchInProgress: a Watch whose subscription is not
// confirmed yet (its confirmation is swallowed here) returns an *Error of
// kind ErrClosed at Close, which returns once the subscriber's goroutine
// did.
func TestCloseInterruptsAWatchInProgress(t *testing.T) {
	c := closeClient(t, false, uniqueName("onceclosewip"))
	s := closeStore(t, c)
	scope, ctx := backendtest.Scope(t), t.Context()
	before := storeGoroutines()
	live, stop, err := s.Watch(ctx, scope, "live") // the subscriber is up
	require.NoError(t, err)
	defer stop()
	s.subs.mu.Lock()
	sc := s.subs.conns[""]
	s.subs.mu.Unlock()
	channel := s.key(scope, "pending")
	sc.mu.Lock()
	sc.skipConfirm[channel]++ // as if an earlier waiter's subscribe were in flight
	sc.mu.Unlock()

	done := make(chan error, 1)
	go func() {
		_, _, err := s.Watch(ctx, scope, "pending")
		done <- err
	}()
	require.Eventually(t, func() bool {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		st := sc.channels[channel]
		return st != nil && len(st.waiters) == 1 && sc.skipConfirm[channel] == 0
	}, wakeWithin, time.Millisecond, "the Watch waits for a confirmation")
	select {
	case err := <-done:
		require.FailNow(t, "Watch returned without a confirmation", "%v", err)
	case <-time.After(50 * time.Millisecond):
	}

	require.NoError(t, s.Close())
	// The goroutine calling Watch above may still be on its way out of
	// the subscribers' code: it is the caller's, not one Close waits for.
	var left []string
	for _, stack := range newGoroutines(before) {
		if !strings.Contains(stack, "TestCloseInterruptsAWatchInProgress.func") {
			left = append(left, stack)
		}
	}
	require.Empty(t, left)
	requireWoken(t, live, "Close")
	select {
	case err := <-done:
		requireClosedError(t, err)
	case <-time.After(wakeWithin):
		require.FailNow(t, "Close did not end the Watch")
	}
}

// TestCloseWhileTheSubscriberFails: the server kills the store's Pub/Sub
// connection just before, just after or while Close runs; whichever wins,
// Close returns once no goroutine is left, the waiter is woken and a
// Watch then fails with ErrClosed.
func TestCloseWhileTheSubscriberFails(t *testing.T) {
	admin := closeClient(t, false, uniqueName("oncecloseadmin")).(*redis.Client)
	for i := range 12 {
		name := uniqueName("onceclosekill")
		c := closeClient(t, false, name)
		s := closeStore(t, c)
		scope, ctx := backendtest.Scope(t), t.Context()
		before := storeGoroutines()
		ch, stop, err := s.Watch(ctx, scope, "k")
		require.NoError(t, err)

		killed := make(chan struct{})
		go func() {
			defer close(killed)
			time.Sleep(time.Duration(i%4) * time.Millisecond)
			list, err := admin.ClientList(context.Background()).Result()
			if err != nil {
				return
			}
			for _, line := range strings.Split(list, "\n") {
				if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, " flags=P") {
					continue
				}
				for _, f := range strings.Fields(line) {
					if id, ok := strings.CutPrefix(f, "id="); ok {
						_ = admin.Do(context.Background(), "CLIENT", "KILL", "ID", id).Err()
					}
				}
			}
		}()
		if i%2 == 1 {
			<-killed
			// A Watch that meets the failing connection, or the fresh one.
			if _, stop2, err := s.Watch(ctx, scope, "other"); err == nil {
				defer stop2()
			}
		}
		require.NoError(t, s.Close())
		require.Empty(t, newGoroutines(before), "round %d: no goroutine of the store is left once Close returned", i)
		requireWoken(t, ch, "Close or the lost connection")
		stop()
		_, _, err = s.Watch(ctx, scope, "k")
		requireClosedError(t, err)
		<-killed
	}
}

// TestCloseConcurrentWithWatches: Close, twice and concurrently, while
// waiters keep watching and stopping: every Watch either returned a
// channel that Close closes, or an error of kind ErrClosed, and none
// other; no goroutine of the store is left.
func TestCloseConcurrentWithWatches(t *testing.T) {
	c := closeClient(t, false, uniqueName("oncecloseconc"))
	s := closeStore(t, c)
	scope, ctx := backendtest.Scope(t), t.Context()
	before := storeGoroutines()
	_, stop, err := s.Watch(ctx, scope, "first") // the subscriber is up
	require.NoError(t, err)
	defer stop()

	const watchers = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		open     []<-chan struct{}
		closedN  int
		watches  int
		unwanted []error
	)
	for i := range watchers {
		wg.Go(func() {
			for j := 0; ; j++ {
				ch, stop, err := s.Watch(ctx, scope, "k"+strconv.Itoa(i*1000+j%50))
				mu.Lock()
				switch {
				case err == nil && j%2 == 0:
					watches++
					stop()
				case err == nil:
					watches++
					open = append(open, ch)
				case errors.Is(err, backends.ErrClosed):
					closedN++
				default:
					unwanted = append(unwanted, err)
				}
				mu.Unlock()
				if errors.Is(err, backends.ErrClosed) {
					return
				}
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	var closers sync.WaitGroup
	for range 2 {
		closers.Go(func() { assert.NoError(t, s.Close()) })
	}
	closers.Wait()
	// The watchers are the test's own goroutines: one may still be inside
	// Watch's code (and match storeFrame) on its way to ErrClosed.
	var left []string
	for _, g := range newGoroutines(before) {
		if !strings.Contains(g, "TestCloseConcurrentWithWatches") {
			left = append(left, g)
		}
	}
	require.Empty(t, left, "no goroutine of the store is left once Close returned")
	wg.Wait() // every watcher saw ErrClosed
	require.Empty(t, unwanted)
	require.Equal(t, watchers, closedN, "every watching goroutine ended on ErrClosed")
	require.NotZero(t, watches, "Watches succeeded before Close")
	for _, ch := range open {
		requireWoken(t, ch, "Close")
	}
	require.Empty(t, newGoroutines(before))
}
