package once

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// manualTimer never fires by itself: the test calls the renewer's renew
// in its place. Stop always cancels it.
type manualTimer struct{}

func (manualTimer) Stop() bool               { return true }
func (manualTimer) Reset(time.Duration) bool { return false }

func installManualTimers(t *testing.T) {
	prev := clock.Load()
	clock.Store(&clockFuncs{now: time.Now, afterFunc: func(time.Duration, func()) timer { return manualTimer{} }})
	t.Cleanup(func() { clock.Store(prev) })
}

// stalledRenew blocks every Renew until release is closed, ignoring its
// context, then reports the claim lost; entered receives each Renew.
type stalledRenew struct {
	backends.Store
	entered chan struct{}
	release chan struct{}
}

func (s *stalledRenew) Renew(context.Context, backends.RenewParams) (bool, error) {
	s.entered <- struct{}{}
	<-s.release
	return false, nil
}

// returns runs f on its own goroutine and fails t unless it returns. A
// failsafe against a hang, not a measure of speed: f waits for nothing.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s waits", what)
	}
}

// A renewal in flight when fn's outcome is written is abandoned: the write
// and stop return while its Renew still blocks (ignoring its context), and
// when it returns, its result (here: the claim lost) is discarded: no
// event, no cancellation of fn's context. Its renewer is not pooled while
// it is in flight, so it cannot touch the next claim's.
func TestRenewalInFlightIsAbandonedByTheWrite(t *testing.T) {
	installManualTimers(t)
	store := &stalledRenew{Store: memory.New(nil), entered: make(chan struct{}), release: make(chan struct{})}
	var mu sync.Mutex
	var events []Event
	cfg := defaultConfig()
	cfg.observer = func(_ context.Context, e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	var lost atomic.Int32
	p := backends.RenewParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute}
	r := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) { lost.Add(1) }))

	renewed := make(chan struct{})
	go func() { defer close(renewed); r.renew() }()
	<-store.entered
	wrote := false
	returns(t, "the write", func() {
		r.write(func(time.Duration) bool { wrote = true; return true })
		r.stop()
		r.recycle()
	})
	require.True(t, wrote)
	for range 8 { // a pooled r would come back (the race detector's pool drops some Puts)
		next := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) {}))
		require.NotSame(t, r, next, "a renewer whose renewal is in flight is left to the garbage collector")
		next.stop()
	}
	close(store.release)
	<-renewed
	require.Zero(t, lost.Load(), "the abandoned renewal cancelled fn's context")
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, events, "the abandoned renewal reported an event")
}

// A write that leaves the claim unsettled (its store write failed) resumes
// renewal; one abandoned before it is still discarded when it returns.
func TestRenewalResumesAfterAnUnsettledWrite(t *testing.T) {
	installManualTimers(t)
	store := &stalledRenew{Store: memory.New(nil), entered: make(chan struct{}, 2), release: make(chan struct{})}
	cfg := defaultConfig()
	var lost atomic.Int32
	p := backends.RenewParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute}
	r := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) { lost.Add(1) }))

	abandoned := make(chan struct{})
	go func() { defer close(abandoned); r.renew() }()
	<-store.entered
	returns(t, "the write", func() { r.write(func(time.Duration) bool { return false }) })
	r.mu.Lock()
	require.True(t, r.armed, "an unsettled write re-arms the renewal it abandoned")
	require.False(t, r.stopped)
	r.mu.Unlock()
	close(store.release)
	<-abandoned
	require.Zero(t, lost.Load(), "the abandoned renewal's lost claim counted")
	r.renew() // the resumed renewal counts: the claim is lost
	<-store.entered
	require.Equal(t, int32(1), lost.Load())
}

// The renewal events queued behind one that blocks in the observer when
// fn's outcome is written are dropped, never handed over after the write
// started; the write waits neither for them nor for the blocked one.
func TestQueuedRenewalEventsAreDroppedByTheWrite(t *testing.T) {
	installManualTimers(t)
	unblock := make(chan struct{})
	var blockOnce sync.Once
	var mu sync.Mutex
	var seen int
	cfg := defaultConfig()
	cfg.observer = func(context.Context, Event) {
		mu.Lock()
		seen++
		mu.Unlock()
		blockOnce.Do(func() { <-unblock })
	}
	p := backends.RenewParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute}
	store := memory.New(nil)
	claimed, err := store.Claim(context.Background(), backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, claimed.Claimed)
	r := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) {}))

	draining := make(chan struct{})
	go func() { defer close(draining); r.renew() }() // emits its event, which blocks
	for {
		mu.Lock()
		n := seen
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	r.renew() // queued behind the blocked event
	r.renew()
	returns(t, "the write", func() { r.write(func(time.Duration) bool { return true }) })
	close(unblock)
	<-draining // the drainer returns once the queue is empty
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, seen, "a renewal event queued before the write reached the observer after it")
}
