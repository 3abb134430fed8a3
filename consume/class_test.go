package consume_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/internal/testservers"
)

// TestClassifiesEachErrorOnce gives Do a classifier that is not a pure
// function (a random class on every call, as a sampling or
// circuit-breaking classifier may answer) and checks, for random handler
// errors on every store, that the classifier runs once per unmarked error
// and never for a marked one, and that the decision says what the core did
// with the claim: ReasonHeld for a key that is held, ReasonDone with the
// error for a key that replays, ReasonHandlerError for a key that runs
// again. The decision is read from the core's Outcome.Status, never from
// a classification of its own, which could disagree with the core's.
func TestClassifiesEachErrorOnce(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(seed, 2))
			calls := 0
			classes := []once.Class{once.ClassRetry, once.ClassFinal, once.ClassHold}
			classifier := func(error) once.Class {
				mu.Lock()
				defer mu.Unlock()
				calls++
				return classes[rng.IntN(len(classes))]
			}
			store := newStore(t)
			scope := once.New(store, once.WithClassifier(classifier), once.WithLease(time.Hour)).Scope("group")
			probe := once.New(store, once.WithLease(time.Hour)).Scope("group")
			steps := 150
			if name != "memory" {
				steps = 60
			}
			for step := range steps {
				key := "k" + strconv.Itoa(step)
				mu.Lock()
				marked := rng.IntN(4) == 0
				mu.Unlock()
				handlerErr := errors.New("provider said something")
				if marked {
					handlerErr = once.Retry(handlerErr)
				}
				mu.Lock()
				before := calls
				mu.Unlock()
				d := consume.Do(context.Background(), scope, key, nil, func(context.Context) error { return handlerErr })
				wantCalls := 1
				if marked {
					wantCalls = 0
				}
				mu.Lock()
				got := calls - before
				mu.Unlock()
				require.Equal(t, wantCalls, got, "step %d: classifier calls for one error (marked %v)", step, marked)

				ran := false
				_, err := once.Do(context.Background(), probe, key, nil, func(context.Context) (int, error) { ran = true; return 1, nil })
				var inProgress *once.InProgressError
				switch d.Reason {
				case consume.ReasonHeld:
					require.ErrorAs(t, err, &inProgress, "step %d: answered held, but the key is not", step)
					require.True(t, inProgress.Held, "step %d", step)
				case consume.ReasonDone:
					require.EqualError(t, err, "provider said something", "step %d: answered final, but no final error replays", step)
				case consume.ReasonHandlerError:
					require.NoError(t, err, "step %d", step)
				default:
					t.Fatalf("step %d: decision %v (%v)", step, d, d.Err)
				}
				require.Equal(t, d.Reason == consume.ReasonHandlerError, ran, "step %d: decision %v, but the probe ran %v", step, d, ran)
			}
		})
	}
}

// TestHeldRetryAfterIsTheHold: the RetryAfter of ReasonHeld is the
// hold the key got (WithHoldFor; one lease by default), at most
// HeldRedelivery, as a redelivery's ReasonInProgress for the held key
// says. It was the lease whatever the hold: a ten-minute hold was
// redelivered after 30 s, a five-second one only after 30 s.
func TestHeldRetryAfterIsTheHold(t *testing.T) {
	cases := []struct {
		name string
		opts []once.Option
		want time.Duration
	}{
		{"default hold, one lease", []once.Option{once.WithLease(20 * time.Second)}, 20 * time.Second},
		{"short hold", []once.Option{once.WithHoldFor(5 * time.Second)}, 5 * time.Second},
		{"long hold", []once.Option{once.WithHoldFor(10 * time.Minute)}, consume.HeldRedelivery},
		{"until resolved", []once.Option{once.WithHoldFor(once.HoldUntilResolved)}, consume.HeldRedelivery},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scope := once.New(nil, c.opts...).Scope("group")
			d := consume.Do(context.Background(), scope, "m1", nil, func(context.Context) error {
				return once.Hold(errors.New("provider timed out"))
			})
			requireDecision(t, d, consume.RetryLater, consume.ReasonHeld)
			require.Equal(t, c.want, d.RetryAfter)
			d = consume.Do(context.Background(), scope, "m1", nil, func(context.Context) error { return nil })
			requireDecision(t, d, consume.RetryLater, consume.ReasonInProgress)
			require.LessOrEqual(t, d.RetryAfter, c.want, "the redelivery's hint: the hold left")
		})
	}
}
