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
	"github.com/stagedoor/once/backends/memory"
)

type timeoutError struct{}

func (timeoutError) Error() string     { return "provider did not answer in 10s" }
func (timeoutError) ErrorCode() string { return "provider_timeout" }

// TestHeldKeyOnEveryStore: a held key is a state of its own on every store
// that keeps it: duplicates are told it is held, with the hold left as
// RetryAfter; the record carries the held error's code and message; a
// Resolve settles it and every retry replays the real answer.
func TestHeldKeyOnEveryStore(t *testing.T) {
	for name, newStore := range reconcilableStores() {
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

			rec, _, found, err := store.(backends.Admin).Get(ctx, "payments", "order-1")
			require.NoError(t, err)
			require.True(t, found)
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
	time.Sleep(3 * once.MinLease) // well past the lease
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
	for name, newStore := range reconcilableStores() {
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
	rec, _, _, err := store.Get(context.Background(), "s", "k")
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
	for name, newStore := range reconcilableStores() {
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
				rec, _, found, err := store.(backends.Admin).Get(ctx, "s", c.key)
				require.NoError(t, err, c.key)
				require.True(t, found, c.key)
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
