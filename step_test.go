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

// stepRuns counts the runs of each step's function.
type stepRuns struct {
	mu   sync.Mutex
	runs map[string]int
}

func (c *stepRuns) ran(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[name]++
}

func (c *stepRuns) of(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[name]
}

func TestStepResumesAfterARetryableError(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("orders")
	var n stepRuns
	down := errors.New("order service down")
	intent := func(failLast bool) (string, error) {
		return once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (string, error) {
			charge, err := once.Step(ctx, "charge", func(context.Context) (string, error) { n.ran("charge"); return "ch_1", nil })
			if err != nil {
				return "", err
			}
			order, err := once.Step(ctx, "order", func(context.Context) (string, error) {
				n.ran("order")
				if failLast {
					return "", down
				}
				return "ord_1", nil
			})
			if err != nil {
				return "", err
			}
			return charge + "/" + order, nil
		})
	}
	_, err := intent(true)
	require.ErrorIs(t, err, down)
	v, err := intent(false)
	require.NoError(t, err)
	require.Equal(t, "ch_1/ord_1", v)
	require.Equal(t, 1, n.of("charge"), "the retry resumed after the checkpointed charge")
	require.Equal(t, 2, n.of("order"))
	v, err = intent(false)
	require.NoError(t, err)
	require.Equal(t, "ch_1/ord_1", v)
	require.Equal(t, 2, n.of("order"), "a replay runs no step")
}

func TestStepFinalErrorIsCheckpointedAndStaysFinal(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("orders")
	var n stepRuns
	declined := errors.New("card declined")
	for range 3 {
		_, err := once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
			return once.Step(ctx, "charge", func(context.Context) (int, error) { n.ran("charge"); return 0, once.Final(declined) })
		})
		require.EqualError(t, err, "card declined")
	}
	require.Equal(t, 1, n.of("charge"), "a final error is the step's and the intent's answer")
}

func TestStepNameRules(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("s")
	var inputErr *once.InvalidInputError
	_, err := once.Step(t.Context(), "a", func(context.Context) (int, error) { return 1, nil })
	require.ErrorAs(t, err, &inputErr, "outside an intent")
	require.Equal(t, "ctx", inputErr.Field)

	_, err = once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
		if _, err := once.Step(ctx, "", func(context.Context) (int, error) { return 1, nil }); !errors.As(err, &inputErr) || inputErr.Field != "step" {
			return 0, once.Final(errors.New("empty name accepted"))
		}
		if _, err := once.Step[int](ctx, "a", nil); !errors.As(err, &inputErr) || inputErr.Field != "fn" {
			return 0, once.Final(errors.New("nil fn accepted"))
		}
		if _, err := once.Step(ctx, "a", func(context.Context) (int, error) { return 1, nil }); err != nil {
			return 0, err
		}
		_, err := once.Step(ctx, "a", func(context.Context) (int, error) { return 2, nil })
		return 0, err
	})
	require.ErrorAs(t, err, &inputErr, "a name used twice in one execution")
	require.Equal(t, "step", inputErr.Field)
}

func TestStepAfterFnReturned(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("s")
	var leaked context.Context
	_, err := once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) { leaked = ctx; return 1, nil })
	require.NoError(t, err)
	_, err = once.Step(leaked, "late", func(context.Context) (int, error) { return 1, nil })
	var inputErr *once.InvalidInputError
	require.ErrorAs(t, err, &inputErr, "a goroutine fn left behind checkpoints nothing")
}

func TestStepUnmatchedCheckpointIsKeptAndReported(t *testing.T) {
	var unmatched []string
	var mu sync.Mutex
	scope := once.New(memory.New(nil), once.WithObserver(func(_ context.Context, e once.Event) {
		if e.Kind == once.EventStepUnmatched {
			mu.Lock()
			unmatched = append(unmatched, e.Step)
			mu.Unlock()
		}
	})).Scope("s")
	retry := errors.New("retry")
	_, err := once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
		if _, err := once.Step(ctx, "old", func(context.Context) (int, error) { return 7, nil }); err != nil {
			return 0, err
		}
		return 0, retry
	})
	require.ErrorIs(t, err, retry)
	var n stepRuns
	v, err := once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
		return once.Step(ctx, "new", func(context.Context) (int, error) { n.ran("new"); return 8, nil })
	})
	require.NoError(t, err)
	require.Equal(t, 8, v, "the old checkpoint is not applied to the renamed step")
	require.Equal(t, 1, n.of("new"))
	require.Equal(t, []string{"old"}, unmatched)
}

func TestStepAtMostOnceHoldsAnInterruptedStep(t *testing.T) {
	clock := newFakeClock()
	store := memory.New(&memory.Config{Now: clock.Now})
	scope := once.New(store, once.WithLease(time.Minute), once.WithHoldFor(once.HoldUntilResolved)).Scope("s")
	var n stepRuns
	// The first execution panics inside the step, after the mark: the
	// outcome is unknown.
	require.Panics(t, func() {
		_, _ = once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
			return once.StepAtMostOnce(ctx, "transfer", func(context.Context) (int, error) { n.ran("transfer"); panic("died mid-transfer") })
		})
	})
	out, err := once.DoOutcome(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
		return once.StepAtMostOnce(ctx, "transfer", func(context.Context) (int, error) { n.ran("transfer"); return 1, nil })
	})
	require.ErrorIs(t, err, once.ErrStepInterrupted)
	require.Contains(t, err.Error(), `"transfer"`, "the error names the step")
	require.Equal(t, once.Held, out.Status)
	require.Equal(t, 1, n.of("transfer"), "never run again")
	rec, err := store.Get(t.Context(), "s", "k")
	require.NoError(t, err)
	require.Equal(t, backends.StateHeld, rec.State)
	require.Equal(t, "once_step_interrupted", rec.Held.Code)
	require.Contains(t, rec.Held.Message, `"transfer"`)
}

func TestStepAtMostOnceRetryableErrorClearsTheMark(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("s")
	var n stepRuns
	busy := errors.New("busy")
	for i, want := range []error{busy, nil} {
		_, err := once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
			return once.StepAtMostOnce(ctx, "transfer", func(context.Context) (int, error) {
				n.ran("transfer")
				if i == 0 {
					return 0, busy
				}
				return 1, nil
			})
		})
		require.ErrorIs(t, err, want)
	}
	require.Equal(t, 2, n.of("transfer"), "a retryable error means the step did not act: it runs again")
}

func TestStepAtMostOnceKeepsTheMarkWhenItsContextEnded(t *testing.T) {
	store := memory.New(nil)
	scope := once.New(store, once.WithHoldFor(once.HoldUntilResolved)).Scope("s")
	var n stepRuns
	ctx, cancel := context.WithCancel(t.Context())
	_, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (int, error) {
		return once.StepAtMostOnce(ctx, "transfer", func(ctx context.Context) (int, error) {
			n.ran("transfer")
			cancel() // the request left; its answer is cut off by the cancellation
			return 0, ctx.Err()
		})
	})
	require.ErrorIs(t, err, context.Canceled)
	_, err = once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
		return once.StepAtMostOnce(ctx, "transfer", func(context.Context) (int, error) { n.ran("transfer"); return 1, nil })
	})
	require.ErrorIs(t, err, once.ErrStepInterrupted, "fn's context ended: it may have acted, so the key is held")
	require.Equal(t, 1, n.of("transfer"), "never run again")
}

func TestStepLostClaimStopsTheSteps(t *testing.T) {
	clock := newFakeClock()
	store := memory.New(&memory.Config{Now: clock.Now})
	scope := once.New(store, once.WithLease(time.Minute)).Scope("s")
	var n stepRuns
	_, err := once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
		// Another owner takes the key over while this one runs.
		clock.Advance(2 * time.Minute)
		r, err := store.Claim(t.Context(), backends.ClaimParams{Scope: "s", Key: "k", Owner: "thief", Lease: time.Hour, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.TookOver)
		v, err := once.Step(ctx, "a", func(context.Context) (int, error) { n.ran("a"); return 1, nil })
		require.ErrorIs(t, err, once.ErrLeaseLost, "the fenced checkpoint tells the stale owner")
		require.ErrorIs(t, context.Cause(ctx), once.ErrLeaseLost, "and fn's context ends")
		_, err2 := once.Step(ctx, "b", func(context.Context) (int, error) { n.ran("b"); return 2, nil })
		require.ErrorIs(t, err2, once.ErrLeaseLost)
		return v, err
	})
	require.ErrorIs(t, err, once.ErrLeaseLost)
	require.Equal(t, 0, n.of("b"), "no step runs after the claim is lost")
}

func TestStepResumesAHeldKeyRunAgain(t *testing.T) {
	clock := newFakeClock()
	scope := once.New(memory.New(&memory.Config{Now: clock.Now}), once.WithLease(time.Minute), once.WithHoldFor(time.Minute)).Scope("s")
	var n stepRuns
	timeout := errors.New("the provider timed out after the request left")
	intent := func(providerAnswers bool) (once.Outcome[string], error) {
		return once.DoOutcome(t.Context(), scope, "k", nil, func(ctx context.Context) (string, error) {
			hold, err := once.Step(ctx, "hold", func(context.Context) (string, error) { n.ran("hold"); return "h_1", nil })
			if err != nil {
				return "", err
			}
			if !providerAnswers {
				return "", once.Hold(timeout)
			}
			return hold + "/ch_1", nil
		})
	}
	out, err := intent(false)
	require.ErrorIs(t, err, timeout)
	require.Equal(t, once.Held, out.Status)
	clock.Advance(2 * time.Minute) // the hold ends: the next call runs fn again
	out, err = intent(true)
	require.NoError(t, err)
	require.Equal(t, "h_1/ch_1", out.Value)
	require.Equal(t, 1, n.of("hold"), "the held key's checkpoints survived the hold")
}

// Steps may run on goroutines of fn: their checkpoints are written one
// after another, each holding every step before it, so a retry replays
// all of them.
func TestStepsOnConcurrentGoroutinesAreAllCheckpointed(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("s")
	var n stepRuns
	down := errors.New("down")
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	intent := func(fail bool) (int, error) {
		return once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (int, error) {
			var wg sync.WaitGroup
			errs := make([]error, len(names))
			for i, name := range names {
				wg.Go(func() {
					_, errs[i] = once.Step(ctx, name, func(context.Context) (int, error) { n.ran(name); return i, nil })
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return 0, err
			}
			if fail {
				return 0, down
			}
			return len(names), nil
		})
	}
	_, err := intent(true)
	require.ErrorIs(t, err, down)
	v, err := intent(false)
	require.NoError(t, err)
	require.Equal(t, len(names), v)
	for _, name := range names {
		require.Equal(t, 1, n.of(name), "step %s ran again: a concurrent checkpoint dropped it", name)
	}
}

// TestStepCodecPanic: a step whose value panics in the codec is settled as
// Do settles such an outcome: the checkpoint stores a final error saying
// so, Do re-raises the panic once the intent is settled, and a retry
// replays the stored answer without running the step again.
func TestStepCodecPanic(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("orders")
	var n stepRuns
	var stepErr error
	intent := func(ctx context.Context) (string, error) {
		n.ran("fn")
		_, err := once.Step(ctx, "charge", func(context.Context) (explodingValue, error) {
			n.ran("charge")
			return explodingValue{}, nil
		})
		stepErr = err
		return "", err
	}
	require.PanicsWithValue(t, "value: MarshalJSON", func() {
		_, _ = once.Do(t.Context(), scope, "k", nil, intent)
	})
	require.ErrorContains(t, stepErr, "cannot be encoded: panic: value: MarshalJSON", "the step answered with the stored failure")
	_, err := once.Do(t.Context(), scope, "k", nil, intent)
	require.ErrorContains(t, err, "cannot be encoded: panic: value: MarshalJSON", "a retry replays the intent's answer")
	require.Equal(t, 1, n.of("charge"))
	require.Equal(t, 1, n.of("fn"))
}
