package once_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
)

type timeoutError struct{}

func (timeoutError) Error() string     { return "provider did not answer in 10s" }
func (timeoutError) ErrorCode() string { return "provider_timeout" }

// TestHeldKeyOnEveryStore: a held key is a state of its own on every store
// that keeps it: duplicates are told it is held, with the hold left as
// RetryAfter; the record carries the held error's code and message; a
// Resolve settles it and every retry replays the real answer.
func TestHeldKeyOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			var mu sync.Mutex
			var events []once.Event
			keeper := once.New(store, once.WithHoldFor(time.Hour), once.WithObserver(func(_ context.Context, e once.Event) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, e)
			}))
			scope := keeper.Scope("payments")
			ctx := context.Background()
			runs := 0
			charge := func(context.Context) (string, error) {
				runs++
				return "", once.Hold(timeoutError{})
			}
			_, err := once.Do(ctx, scope, "order-1", once.Fingerprint("fp"), charge)
			require.ErrorIs(t, err, timeoutError{})

			_, err = once.Do(ctx, scope, "order-1", once.Fingerprint("fp"), charge)
			var inProgress *once.InProgressError
			require.ErrorAs(t, err, &inProgress)
			require.True(t, inProgress.Held, "held, not running")
			require.Greater(t, inProgress.RetryAfter, 59*time.Minute, "RetryAfter is the hold left, not a second")
			require.LessOrEqual(t, inProgress.RetryAfter, time.Hour)
			require.NotContains(t, err.Error(), "provider did not answer", "the held error is never echoed to another caller")
			require.Equal(t, 1, runs)

			rec, err := store.(backends.Admin).Get(ctx, "payments", "order-1")
			require.NoError(t, err)
			require.NotZero(t, rec.State)
			require.Equal(t, backends.StateHeld, rec.State)
			require.Equal(t, "provider_timeout", rec.Held.Code)
			require.Equal(t, "provider did not answer in 10s", rec.Held.Message)

			mu.Lock()
			var held *once.Event
			for i := range events {
				if events[i].Kind == once.EventHeld {
					held = &events[i]
				}
			}
			mu.Unlock()
			require.NotNil(t, held)
			require.Equal(t, "hold", held.Op)
			require.NoError(t, held.Err)

			require.NoError(t, once.Resolve(ctx, scope, "order-1", nil, "charge-1", nil))
			v, err := once.Do(ctx, scope, "order-1", once.Fingerprint("fp"), charge)
			require.NoError(t, err)
			require.Equal(t, "charge-1", v)
			require.Equal(t, 1, runs, "one charge")
		})
	}
}

func TestHoldUntilResolvedNeverRunsAgainByItself(t *testing.T) {
	store := memory.New(nil)
	scope := once.New(store, once.WithLease(once.MinLease), once.WithHoldFor(once.HoldUntilResolved)).Scope("s")
	ctx := context.Background()
	_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	require.Error(t, err)
	backendtest.Elapse(t, store, 3*once.MinLease) // well past the lease
	_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	require.True(t, inProgress.Held)
	require.Greater(t, inProgress.RetryAfter, 100*365*24*time.Hour, "only a resolution ends the hold, and RetryAfter says so")
}

func TestDefaultHoldIsOneLease(t *testing.T) {
	store := memory.New(nil)
	scope := once.New(store, once.WithLease(time.Minute)).Scope("s")
	ctx := context.Background()
	_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	require.Error(t, err)
	_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	require.True(t, inProgress.Held)
	require.Greater(t, inProgress.RetryAfter, 59*time.Second)
	require.LessOrEqual(t, inProgress.RetryAfter, time.Minute)
}

// TestHoldThroughAWrapperThatEmbedsTheStore: a store wrapper that embeds
// backends.Store (and hides every optional interface) still holds: Hold is
// part of the contract, so a held key answers in progress with Held set
// and the hold's time left, never as a pending claim.
func TestHoldThroughAWrapperThatEmbedsTheStore(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			store := plainStore{newStore(t)}
			scope := once.New(store, once.WithLease(time.Minute), once.WithHoldFor(time.Hour)).Scope("s")
			ctx := context.Background()
			_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
			require.Error(t, err)
			ran := false
			_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { ran = true; return 1, nil })
			var inProgress *once.InProgressError
			require.ErrorAs(t, err, &inProgress)
			require.False(t, ran)
			require.True(t, inProgress.Held, "held, not pending")
			require.Greater(t, inProgress.RetryAfter, 59*time.Minute, "the hold's time left, not the lease's")
		})
	}
}

func TestHeldMessageIsCutAtARuneBoundary(t *testing.T) {
	store := memory.New(nil)
	scope := once.New(store).Scope("s")
	long := errors.New(string(make([]byte, 0)) + repeat("é", 600))
	_, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(long) })
	require.Error(t, err)
	rec, err := store.Get(context.Background(), "s", "k")
	require.NoError(t, err)
	require.LessOrEqual(t, len(rec.Held.Message), backends.MaxHeldMessageLen)
	require.Equal(t, repeat("é", backends.MaxHeldMessageLen/2), rec.Held.Message)
}

type heldTextError struct{ code, msg string }

func (e heldTextError) Error() string     { return e.msg }
func (e heldTextError) ErrorCode() string { return e.code }

// TestHoldMakesTheHeldTextStorable: a held error's text and code with invalid
// UTF-8 or NUL, which every store refuses (backends.HeldProblem; a
// PostgreSQL text column cannot store them), do not fail the Hold: the
// core replaces them with U+FFFD and cuts the result to the limits.
func TestHoldMakesTheHeldTextStorable(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			scope := once.New(store, once.WithHoldFor(time.Hour)).Scope("s")
			ctx := context.Background()
			for _, c := range []struct {
				key                   string
				err                   heldTextError
				wantCode, wantMessage string
			}{
				{"bytes", heldTextError{"code\xff\x00", "bad \xff\xfe byte\x00end"}, "code\uFFFD\uFFFD", "bad \uFFFD byte\uFFFDend"},
				// 255 "é" and an invalid byte fill 511 bytes: its U+FFFD
				// would make 513, so the cut drops it.
				{"long", heldTextError{repeat("c", 70) + "\x00", repeat("é", 255) + "\xff" + repeat("é", 100)}, repeat("c", backends.MaxHeldCodeLen), repeat("é", 255)},
			} {
				_, err := once.Do(ctx, scope, c.key, nil, func(context.Context) (int, error) { return 0, once.Hold(c.err) })
				require.ErrorIs(t, err, c.err, c.key)
				rec, err := store.(backends.Admin).Get(ctx, "s", c.key)
				require.NoError(t, err, c.key)
				require.NotZero(t, rec.State, c.key)
				require.Equal(t, backends.StateHeld, rec.State, "%s: the Hold did not fail", c.key)
				require.Equal(t, c.wantCode, rec.Held.Code, c.key)
				require.Equal(t, c.wantMessage, rec.Held.Message, c.key)
				field, reason := backends.HeldProblem(rec.Held.Code, rec.Held.Message)
				require.Empty(t, reason, "%s: %s", c.key, field)
			}
		})
	}
}

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}

// eventLog records a call's events for a test.
type eventLog struct {
	mu     sync.Mutex
	events []once.Event
}

func (l *eventLog) observe(_ context.Context, e once.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// count returns how many events of kind with op were seen.
func (l *eventLog) count(kind once.EventKind, op string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Kind == kind && e.Op == op {
			n++
		}
	}
	return n
}

// last returns the last event of kind.
func (l *eventLog) last(kind once.EventKind) (once.Event, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.events) - 1; i >= 0; i-- {
		if l.events[i].Kind == kind {
			return l.events[i], true
		}
	}
	return once.Event{}, false
}

// TestATransientHoldFailureIsRetried: the Hold that keeps a key held after
// a held error is retried as a completion is, on every store. One failed
// attempt (a connection reset) must not leave the claim pending and
// unrenewed, which a takeover would run again one lease later even with
// HoldUntilResolved; the retry holds the key, and Do answers fn's error
// alone.
func TestATransientHoldFailureIsRetried(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			inner := newStore(t)
			store := newFaultStore(inner)
			var failed bool
			store.set(func(f *faultStore) {
				f.hold = func(ctx context.Context, p backends.HoldParams) (bool, error) {
					if !failed {
						failed = true // the hook runs under the claim's write lock: no race
						return false, errors.New("connection reset by peer")
					}
					return inner.Hold(ctx, p)
				}
			})
			const lease = 300 * time.Millisecond
			var log eventLog
			scope := once.New(store, once.WithLease(lease), once.WithHoldFor(once.HoldUntilResolved), once.WithObserver(log.observe)).Scope("s")
			runs := 0
			fn := func(context.Context) (int, error) {
				runs++
				return 0, once.Hold(timeoutError{})
			}
			out, err := once.DoOutcome(ctx, scope, "k", nil, fn)
			require.ErrorIs(t, err, timeoutError{})
			require.NotErrorIs(t, err, once.ErrOutcomeUnrecorded, "the retry held the key")
			require.Equal(t, once.Held, out.Status)
			require.Equal(t, 2, store.Calls("hold"), "one failed attempt, one retry")
			require.Equal(t, 1, log.count(once.EventStoreError, "hold"), "the failed attempt is reported")
			held, _ := log.last(once.EventHeld)
			require.NoError(t, held.Err)

			backendtest.Elapse(t, inner, 3*lease) // a pending claim would have been taken over by now
			_, err = once.Do(ctx, scope, "k", nil, fn)
			var inProgress *once.InProgressError
			require.ErrorAs(t, err, &inProgress, "a key held until resolved is never claimable by itself")
			require.True(t, inProgress.Held)
			require.Equal(t, 1, runs, "fn (outcome unknown) ran again")
			rec, err := inner.(backends.Admin).Get(ctx, "s", "k")
			require.NoError(t, err)
			require.NotZero(t, rec.State)
			require.Equal(t, backends.StateHeld, rec.State)
		})
	}
}

// TestAHoldThatKeepsFailingIsReportedUnrecorded: when every attempt of the
// Hold fails, Do says so: fn's error joined with an *UnrecordedError
// (ErrOutcomeUnrecorded, the last store failure), and Status HoldUnrecorded,
// since the key is not held and runs fn again after its lease. Renewal
// stops when Do returns.
func TestAHoldThatKeepsFailingIsReportedUnrecorded(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	down := errors.New("connection refused")
	store.set(func(f *faultStore) {
		f.hold = func(context.Context, backends.HoldParams) (bool, error) { return false, down }
	})
	var log eventLog
	scope := once.New(store, once.WithLease(panicLease), once.WithObserver(log.observe)).Scope("s")
	out, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(timeoutError{}) })
	require.ErrorIs(t, err, timeoutError{}, "fn's error is in the answer")
	require.ErrorIs(t, err, once.ErrOutcomeUnrecorded)
	require.ErrorIs(t, err, down, "the last store failure is in the answer")
	var unrecorded *once.UnrecordedError
	require.ErrorAs(t, err, &unrecorded)
	require.Equal(t, once.HoldUnrecorded, out.Status)
	require.Equal(t, 3, store.Calls("hold"), "the Hold is tried as a Complete is")
	require.Equal(t, 3, log.count(once.EventStoreError, "hold"))
	held, ok := log.last(once.EventHeld)
	require.True(t, ok)
	require.ErrorIs(t, held.Err, down)

	renewals := store.Calls("renew")
	backendtest.Elapse(t, store.Store, panicLease) // three renewal intervals
	require.Equal(t, renewals, store.Calls("renew"), "no renewal after Do returned")
}

// TestASlowHoldNeverLetsTheLeaseLapse: the Hold runs as a completion does,
// under the renewer: each attempt's deadline ends before the proven lease
// does, and the lease is renewed between attempts. A store that stalls on
// the Hold (a lock wait, a network stall) must not let the lease lapse, or
// a duplicate takes the key over and runs fn while the first outcome is
// unknown.
func TestASlowHoldNeverLetsTheLeaseLapse(t *testing.T) {
	ctx := context.Background()
	inner := memory.New(nil)
	store := newFaultStore(inner)
	const lease = 300 * time.Millisecond
	var stalls int
	var late []time.Duration // deadlines past the lease
	store.set(func(f *faultStore) {
		f.hold = func(ctx context.Context, p backends.HoldParams) (bool, error) {
			// The hook runs under the claim's write lock: no race on stalls.
			if stalls < 2 {
				stalls++
				if d, ok := ctx.Deadline(); !ok || time.Until(d) > lease {
					late = append(late, time.Until(d))
				}
				select { // stalls until the attempt's deadline
				case <-ctx.Done():
					return false, ctx.Err()
				case <-time.After(10 * time.Second):
					return false, errors.New("test: the Hold had no deadline")
				}
			}
			return inner.Hold(ctx, p)
		}
	})
	scope := once.New(store, once.WithLease(lease), once.WithHoldFor(once.HoldUntilResolved)).Scope("s")
	var mu sync.Mutex
	runs := 0
	fn := func(context.Context) (int, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		return 0, once.Hold(timeoutError{})
	}
	first := make(chan error, 1)
	go func() { _, err := once.Do(ctx, scope, "k", nil, fn); first <- err }()

	var dupErrs []error
	var err error
	for done := false; !done; {
		select {
		case err = <-first:
			done = true
		case <-time.After(10 * time.Millisecond):
			_, dupErr := once.Do(ctx, scope, "k", nil, fn)
			dupErrs = append(dupErrs, dupErr)
		}
	}
	require.ErrorIs(t, err, timeoutError{})
	require.NotErrorIs(t, err, once.ErrOutcomeUnrecorded, "the third attempt held the key")
	require.Empty(t, late, "every Hold attempt ends within the lease")
	mu.Lock()
	require.Equal(t, 1, runs, "a duplicate ran fn while the first outcome was unknown")
	mu.Unlock()
	require.NotEmpty(t, dupErrs)
	for _, e := range dupErrs {
		require.ErrorIs(t, e, once.ErrInProgress, "a duplicate during the owner's Hold is told in progress")
	}
	_, err = once.Do(ctx, scope, "k", nil, fn)
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	require.True(t, inProgress.Held)
}

// TestAPanicInAHeldErrorsTextStillHoldsTheKey: a held error whose Error or
// ErrorCode panics still holds the key, with a placeholder in place of the
// text that could not be read, and then Do panics with the same value, as
// for any panic of user code. The claim must not be left pending and
// unrenewed, where a takeover would run fn again one lease later even
// with HoldUntilResolved.
func TestAPanicInAHeldErrorsTextStillHoldsTheKey(t *testing.T) {
	for _, c := range []struct {
		name                  string
		err                   explodingError
		panic                 string
		wantCode, wantMessage string
	}{
		{"Error", explodingError{inText: true}, "error: Error", "exploding", "once: the held error's Error method panicked"},
		{"ErrorCode", explodingError{inCode: true}, "error: ErrorCode", "", "exploding"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			store := memory.New(nil)
			scope := once.New(store, once.WithLease(panicLease), once.WithHoldFor(once.HoldUntilResolved)).Scope("s")
			require.PanicsWithValue(t, c.panic, func() {
				_, _ = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(c.err) })
			})
			rec, err := store.Get(ctx, "s", "k")
			require.NoError(t, err)
			require.NotZero(t, rec.State)
			require.Equal(t, backends.StateHeld, rec.State, "the key is held, not left pending")
			require.Equal(t, c.wantCode, rec.Held.Code)
			require.Equal(t, c.wantMessage, rec.Held.Message)

			backendtest.Elapse(t, store, panicLease) // a pending claim would have been taken over by now
			ran := false
			_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { ran = true; return 1, nil })
			var inProgress *once.InProgressError
			require.ErrorAs(t, err, &inProgress)
			require.True(t, inProgress.Held)
			require.False(t, ran, "a key held until resolved ran fn again after the panic")
		})
	}
}

// TestAHoldAfterATakeoverReportsTheLeaseLost: a Hold that finds the claim
// taken over (its lease lapsed, another caller claimed the key) writes
// nothing, and Do reports it as a completion that finds the claim lost
// does: fn's error joined with ErrLeaseLost, and Status LeaseLost, not
// Held, for a key another caller now owns.
func TestAHoldAfterATakeoverReportsTheLeaseLost(t *testing.T) {
	ctx := context.Background()
	inner := memory.New(nil)
	store := newFaultStore(inner)
	store.set(func(f *faultStore) {
		f.hold = func(ctx context.Context, p backends.HoldParams) (bool, error) {
			// Another caller took the key over before the Hold arrived.
			if _, err := inner.Release(ctx, backends.ReleaseParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner}); err != nil {
				return false, err
			}
			res, err := inner.Claim(ctx, backends.ClaimParams{Scope: p.Scope, Key: p.Key, Owner: "thief", Lease: time.Hour, Retention: time.Hour})
			if err != nil || !res.Claimed {
				return false, errors.Join(err, errors.New("test: the takeover failed"))
			}
			return inner.Hold(ctx, p)
		}
	})
	var log eventLog
	scope := once.New(store, once.WithLease(time.Minute), once.WithObserver(log.observe)).Scope("s")
	out, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(timeoutError{}) })
	require.ErrorIs(t, err, once.ErrLeaseLost)
	require.ErrorIs(t, err, timeoutError{})
	require.Equal(t, once.LeaseLost, out.Status)
	require.Equal(t, 1, store.Calls("hold"), "a lost claim is not retried")
	held, ok := log.last(once.EventHeld)
	require.True(t, ok)
	require.ErrorIs(t, held.Err, once.ErrLeaseLost)
	rec, err := inner.Get(ctx, "s", "k")
	require.NoError(t, err)
	require.Equal(t, backends.StatePending, rec.State, "the new owner's claim is left as it is")
}

// plainStore hides every optional interface of its store.
type plainStore struct{ backends.Store }
