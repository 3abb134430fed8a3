package once_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/memory"
)

func TestLongFnKeepsOwnershipThroughRenewal(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	// The lease leaves a renewal, sent every third of it, a second of
	// slack: on a loaded CI machine a 300 ms wait took 800 ms.
	scope := once.New(store, once.WithLease(1500*time.Millisecond)).Scope("s")
	done := make(chan error, 1)
	started, finish := make(chan struct{}), make(chan struct{})
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (string, error) {
			close(started)
			select {
			case <-finish: // after the duplicates: more than two and a half leases
				return "finished", nil
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		})
		done <- err
	}()
	<-started
	var duplicateRuns atomic.Int32
	for range 10 {
		backendtest.Elapse(t, store.Store, 400*time.Millisecond) // 4 s in all by the store's clock, longer on a slow machine
		_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) {
			duplicateRuns.Add(1)
			return "duplicate", nil
		})
		assert.ErrorIs(t, err, once.ErrInProgress)
	}
	close(finish)
	require.NoError(t, <-done, "fn's context must not be cancelled while renewals succeed")
	assert.Zero(t, duplicateRuns.Load())
	assert.GreaterOrEqual(t, store.Calls("renew"), 4)
	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) { return "again", nil })
	require.NoError(t, err)
	assert.Equal(t, "finished", v)
}

// A stale owner — paused past its lease (as by SIGSTOP), so its renewals
// never reach the store — wakes after another caller took the key over and
// completed it. Its completion is refused: ErrLeaseLost, nothing overwritten.
func TestStaleOwnerGetsLeaseLostAndOverwritesNothing(t *testing.T) {
	ctx := context.Background()
	inner := memory.New(nil)
	store := newFaultStore(inner)
	paused := errors.New("process paused")
	store.set(func(f *faultStore) {
		f.renew = func(context.Context, backends.RenewParams) (bool, error) { return false, paused }
	})
	scope := once.New(store, once.WithLease(100*time.Millisecond)).Scope("s")

	started, resume := make(chan struct{}), make(chan struct{})
	type result struct {
		v     string
		err   error
		cause error
	}
	staleDone := make(chan result, 1)
	go func() {
		var cause error
		v, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (string, error) {
			close(started)
			<-resume // paused; ignores its context like a stopped process
			cause = context.Cause(ctx)
			return "stale", nil
		})
		staleDone <- result{v, err, cause}
	}()
	<-started
	awaitLeaseEnd(t, inner, "s", "k")

	store.set(func(f *faultStore) { f.renew = nil })
	fresh, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (string, error) { return "fresh", nil })
	require.NoError(t, err)
	require.NotEqual(t, once.Replayed, fresh.Status, "the expired claim was taken over")

	close(resume)
	stale := <-staleDone
	assert.ErrorIs(t, stale.err, once.ErrLeaseLost)
	assert.ErrorIs(t, stale.cause, once.ErrLeaseLost, "fn's context was cancelled when ownership could not be proven")

	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) { return "third", nil })
	require.NoError(t, err)
	assert.Equal(t, "fresh", v, "the stale owner overwrote nothing")
}

func TestRenewReportingLostCancelsFn(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	store.set(func(f *faultStore) {
		f.renew = func(context.Context, backends.RenewParams) (bool, error) { return false, nil }
	})
	scope := once.New(store, once.WithLease(60*time.Millisecond)).Scope("s")
	_, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	assert.ErrorIs(t, err, once.ErrLeaseLost)
	assert.ErrorIs(t, err, context.Canceled, "fn's own error comes back too")
}

func TestCrashedOwnerIsTakenOverAfterLease(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	mem := memory.New(&memory.Config{Now: clock.Now})
	// A claim whose owner died: made directly in the store, never completed.
	_, err := mem.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "dead", Lease: 30 * time.Second, Retention: time.Hour})
	require.NoError(t, err)
	scope := once.New(mem).Scope("s")
	_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.ErrorIs(t, err, once.ErrInProgress)
	clock.Advance(31 * time.Second)
	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	ok, err := mem.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: "dead", Outcome: []byte("x"), Retention: time.Hour})
	require.NoError(t, err)
	assert.False(t, ok, "the dead owner's token is fenced off")
}

// A renewal that fails slowly just before two thirds of the lease, then
// one that hangs until its context ends, must not keep fn's context live
// past the proven lease: the watchdog cancels it (cause ErrLeaseLost) a
// margin before the lease ends, so a duplicate that takes the key over
// after the lease never runs beside a live owner. Timeline, lease 300 ms
// (renewals every 100 ms, margin 60 ms): the renewal sent at 100 ms fails
// at 195 ms (before 200 ms, so the renewer carries on), the next, sent at
// 295 ms, hangs; the watchdog fires at 240 ms; a duplicate claims once the
// store shows the lease ended. Before the watchdog, fn's context stayed live until the hung
// renewal's timeout at 395 ms (review finding R8).
func TestRenewalThatHangsPastTheLeaseCancelsFnFirst(t *testing.T) {
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	inner := memory.New(nil)
	store := newFaultStore(inner)
	var n atomic.Int32
	store.set(func(f *faultStore) {
		f.renew = func(ctx context.Context, p backends.RenewParams) (bool, error) {
			if n.Add(1) == 1 {
				select { // a slow failure, within the renewal's timeout
				case <-time.After(95 * time.Millisecond):
				case <-ctx.Done():
				}
				return false, errors.New("connection reset")
			}
			<-ctx.Done() // hangs until the renewal's context ends
			return false, ctx.Err()
		}
	})
	scope := once.New(store, once.WithLease(lease)).Scope("s")
	started, secondRan := make(chan struct{}), make(chan struct{})
	type first struct {
		live  bool
		cause error
	}
	firstDone := make(chan first, 1)
	done := make(chan error, 1)
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(fctx context.Context) (int, error) {
			close(started)
			select {
			case <-secondRan:
			case <-fctx.Done():
			}
			firstDone <- first{live: fctx.Err() == nil, cause: context.Cause(fctx)}
			return 1, nil
		})
		done <- err
	}()
	<-started
	awaitLeaseEnd(t, inner, "s", "k")
	ran := false
	_, _ = once.Do(ctx, once.New(inner, once.WithLease(lease)).Scope("s"), "k", nil, func(context.Context) (int, error) {
		ran = true
		close(secondRan)
		return 2, nil
	})
	if !ran {
		close(secondRan)
	}
	f := <-firstDone
	<-done // fn's outcome is recorded, fenced: if the duplicate ran, ErrLeaseLost
	assert.False(t, ran && f.live, "a duplicate ran fn while the first fn still ran with a live context (renewals %d)", n.Load())
	assert.False(t, f.live, "fn's context is cancelled before the lease ends")
	assert.ErrorIs(t, f.cause, once.ErrLeaseLost, "fn's context ends with cause ErrLeaseLost")
}

// An observer that blocks on EventRenewed (a slow log sink, a full
// channel) stopped every later renewal, since the renewer emitted its
// events holding the lock that serialises renewals; nothing cancelled fn,
// and a duplicate took the key over and ran fn beside it (review finding
// R4). Renewal events are now emitted outside that lock: renewals go on
// while the observer blocks, the duplicate is told the key is in
// progress, and no renewal event reaches the observer after Do returned:
// those queued behind the blocked one are dropped when fn's outcome is
// written.
func TestBlockingRenewalObserverNeitherStopsRenewalsNorLetsADuplicateIn(t *testing.T) {
	ctx := context.Background()
	const lease = 60 * time.Millisecond
	unblock := make(chan struct{})
	var blockOnce sync.Once
	var inObserver, afterReturn atomic.Bool
	var returned atomic.Bool
	obs := func(_ context.Context, e once.Event) {
		if returned.Load() {
			afterReturn.Store(true)
		}
		if e.Kind == once.EventRenewed {
			blockOnce.Do(func() { inObserver.Store(true); <-unblock })
		}
	}
	inner := memory.New(nil)
	store := newFaultStore(inner)
	scope := once.New(store, once.WithLease(lease), once.WithObserver(obs)).Scope("s")

	var running atomic.Int32
	var overlap atomic.Bool
	firstCtxLive := make(chan bool, 1)
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(fctx context.Context) (int, error) {
			running.Add(1)
			close(started)
			<-finish
			firstCtxLive <- fctx.Err() == nil
			running.Add(-1)
			return 1, nil
		})
		returned.Store(true)
		done <- err
	}()
	<-started
	eventually(t, inObserver.Load, "no renewal event reached the observer")
	backendtest.Elapse(t, inner, 2*lease) // without renewals, the lease would have ended
	renewals := store.Calls("renew")
	_, err := once.Do(ctx, once.New(inner, once.WithLease(lease)).Scope("s"), "k", nil, func(context.Context) (int, error) {
		if running.Load() > 0 {
			overlap.Store(true)
		}
		return 2, nil
	})
	close(finish)
	live := <-firstCtxLive
	close(unblock)
	require.NoError(t, <-done)
	assert.True(t, inObserver.Load(), "the observer blocked")
	assert.GreaterOrEqual(t, renewals, 3, "renewals go on while the observer blocks")
	assert.ErrorIs(t, err, once.ErrInProgress, "the duplicate took the key over from a live owner")
	assert.False(t, overlap.Load() && live, "two fns of one key ran at once, the first with a live context")
	assert.False(t, afterReturn.Load(), "an event reached the observer after Do returned")
}

// A lease under MinLease is refused with an *InvalidInputError before any
// store call: the renewal interval had a 1 ms floor, so a lease under
// about 3 ms was never renewed in time, and with a 100 µs lease fn ran 65
// times for one key, 64 of them overlapping (review finding R6).
// MinLease itself is accepted.
func TestLeaseBelowMinLeaseIsRefusedBeforeTheStore(t *testing.T) {
	ctx := context.Background()
	for _, d := range []time.Duration{time.Nanosecond, 100 * time.Microsecond, time.Millisecond, once.MinLease - 1} {
		store := newFaultStore(memory.New(nil))
		ran := false
		_, err := once.Do(ctx, once.New(store, once.WithLease(d)).Scope("s"), "k", nil, func(context.Context) (int, error) {
			ran = true
			return 1, nil
		})
		var invalid *once.InvalidInputError
		require.ErrorAs(t, err, &invalid, "lease %v", d)
		assert.Equal(t, "lease", invalid.Field)
		assert.ErrorAs(t, err, new(*once.InvalidInputError))
		assert.False(t, ran, "lease %v: fn ran", d)
		assert.Zero(t, store.Calls("claim"), "lease %v: the store was called", d)
	}
	v, err := once.Do(ctx, once.New(nil, once.WithLease(once.MinLease)).Scope("s"), "k", nil, func(context.Context) (int, error) { return 7, nil })
	require.NoError(t, err)
	assert.Equal(t, 7, v)
}

// proofStore records when each proof of a claim's lease reached the store
// (the claim, and each renewal that succeeded) and makes Renew misbehave
// at random: fail at once or slowly, hang until its context ends, hang
// ignoring its context (as go-redis does without ContextTimeoutEnabled),
// or succeed slowly.
type proofStore struct {
	backends.Store
	lease time.Duration
	rnd   func() float64
	mu    sync.Mutex
	proof map[string][]time.Time
}

func (s *proofStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	at := time.Now()
	r, err := s.Store.Claim(ctx, p)
	if err == nil && r.Claimed {
		s.mu.Lock()
		s.proof[p.Key] = append(s.proof[p.Key], at)
		s.mu.Unlock()
	}
	return r, err
}

func (s *proofStore) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	wait := func(d time.Duration, honour bool) error {
		t := time.NewTimer(d)
		defer t.Stop()
		if !honour {
			<-t.C
			return nil
		}
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r, d := s.rnd(), time.Duration(s.rnd()*float64(s.lease))
	switch {
	case r < 0.15:
		return false, errors.New("connection reset")
	case r < 0.3:
		if err := wait(d/3, true); err != nil {
			return false, err
		}
		return false, errors.New("connection reset, slowly")
	case r < 0.45:
		<-ctx.Done()
		return false, ctx.Err()
	case r < 0.55:
		_ = wait(d, false)
		return false, errors.New("read timeout")
	case r < 0.65:
		if err := wait(d/6, true); err != nil {
			return false, err
		}
	}
	at := time.Now()
	ok, err := s.Store.Renew(ctx, p)
	if ok && err == nil {
		s.mu.Lock()
		s.proof[p.Key] = append(s.proof[p.Key], at)
		s.mu.Unlock()
	}
	return ok, err
}

// TestFnContextNeverOutlivesTheProvenLease checks, over random renewal
// failures, hangs (honouring their context or not) and observers that
// block on EventRenewed, the promise the watchdog keeps: while fn's
// context is live, the store has received a proof of the lease (the claim
// or a successful renewal) less than one lease ago, so no duplicate can
// have taken the key over. The watchdog cancels a fifth of a lease early;
// a timer that fires later than that on a loaded machine would fail it.
// ONCE_LEASE_RANDOM_SECONDS (default 2) sets the run's length.
func TestFnContextNeverOutlivesTheProvenLease(t *testing.T) {
	secs := 2
	if n, err := strconv.Atoi(os.Getenv("ONCE_LEASE_RANDOM_SECONDS")); err == nil && n > 0 {
		secs = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 2))
	rnd := func() float64 { rmu.Lock(); defer rmu.Unlock(); return rng.Float64() }
	const lease = 500 * time.Millisecond
	store := &proofStore{Store: memory.New(nil), lease: lease, rnd: rnd, proof: map[string][]time.Time{}}
	obs := func(_ context.Context, e once.Event) {
		if e.Kind == once.EventRenewed && rnd() < 0.2 {
			time.Sleep(time.Duration(rnd() * float64(lease)))
		}
	}
	scope := once.New(store, once.WithLease(lease), once.WithObserver(obs)).Scope("s")
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	var mu sync.Mutex
	var problems []string
	var calls, cancelled atomic.Int32
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				run := time.Duration(rnd() * float64(4*lease))
				var liveUntil time.Time
				calls.Add(1)
				_, _ = once.Do(context.Background(), scope, key, nil, func(fctx context.Context) (int, error) {
					// liveUntil is the last instant known to precede a
					// check that found the context live: fn's own wake-up,
					// late on a loaded machine, never counts as live.
					for end := time.Now().Add(run); ; {
						at := time.Now()
						if fctx.Err() != nil {
							cancelled.Add(1)
							return 1, nil
						}
						liveUntil = at
						if !at.Before(end) {
							return 1, nil
						}
						select {
						case <-time.After(min(end.Sub(at), lease/50)):
						case <-fctx.Done():
						}
					}
				})
				var proofs []time.Time // those before fn's context ended, then its end
				store.mu.Lock()
				for _, at := range store.proof[key] {
					if at.Before(liveUntil) {
						proofs = append(proofs, at)
					}
				}
				store.mu.Unlock()
				proofs = append(proofs, liveUntil)
				for j := 1; j < len(proofs); j++ {
					if gap := proofs[j].Sub(proofs[j-1]); gap >= lease {
						mu.Lock()
						problems = append(problems, fmt.Sprintf("%s: fn's context live %v after the lease's last proof (proof %d of %d)", key, gap, j, len(proofs)-1))
						mu.Unlock()
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d calls, %d fns cancelled", calls.Load(), cancelled.Load())
	require.Positive(t, cancelled.Load(), "no fn was cancelled: the random faults never bit")
	for _, p := range problems {
		t.Error(p)
	}
}
