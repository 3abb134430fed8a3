package once_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// A non-positive lease or retention, a negative wait or a non-positive
// outcome cap is an *InvalidInputError from Do and Resolve, before any
// store call; it never silently falls back to a default.
func TestNonPositiveDurationsAreInvalidInput(t *testing.T) {
	cases := []struct {
		name  string
		opt   once.Option
		field string
	}{
		{"zero lease", once.WithLease(0), "lease"},
		{"negative lease", once.WithLease(-time.Second), "lease"},
		{"min lease", once.WithLease(math.MinInt64), "lease"},
		{"zero retention", once.WithRetention(0), "retention"},
		{"negative retention", once.WithRetention(-time.Hour), "retention"},
		{"negative wait", once.WithWait(-time.Nanosecond), "wait"},
		{"zero outcome cap", once.WithMaxOutcomeSize(0), "max_outcome_size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := newFaultStore(memory.New(nil))
			ran := false
			fn := func(context.Context) (int, error) { ran = true; return 1, nil }
			var invalid *once.InvalidInputError
			for _, scope := range []once.Scope{once.New(store, c.opt).Scope("s"), once.New(store).Scope("s").With(c.opt)} {
				_, err := once.Do(context.Background(), scope, "k", nil, fn)
				require.ErrorAs(t, err, &invalid)
				assert.Equal(t, c.field, invalid.Field)
				require.ErrorAs(t, once.Resolve(context.Background(), scope, "k", nil, 1, nil), &invalid)
				assert.Equal(t, c.field, invalid.Field)
			}
			assert.False(t, ran)
			assert.Zero(t, store.Calls("claim"))
		})
	}
	_, err := once.Do(context.Background(), once.New(nil, once.WithWait(0)).Scope("s"), "k", nil,
		func(context.Context) (int, error) { return 1, nil })
	assert.NoError(t, err, "a zero wait means no waiting")
}

// The largest durations mean "that long": the lease is passed to the store
// as given, the renewal interval, the wait deadline and the retry-after
// hint never overflow, and a duplicate is told the key is in progress.
func TestExtremeDurationsPassThrough(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	scope := once.New(store, once.WithLease(math.MaxInt64), once.WithRetention(math.MaxInt64)).Scope("s")
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) {
			close(started)
			<-finish
			return 7, nil
		})
		done <- err
	}()
	<-started
	_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, nil })
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	assert.Equal(t, time.Second, inProgress.RetryAfter)
	assert.Greater(t, inProgress.LeaseRemaining, 100*365*24*time.Hour)

	waited := make(chan int, 1)
	go func() {
		v, err := once.Do(ctx, scope.With(once.WithWait(math.MaxInt64)), "k", nil,
			func(context.Context) (int, error) { return 0, nil })
		assert.NoError(t, err)
		waited <- v
	}()
	time.Sleep(50 * time.Millisecond) // let the waiter start waiting; the result does not depend on it
	close(finish)
	require.NoError(t, <-done)
	assert.Equal(t, 7, <-waited, "a wait of math.MaxInt64 returns the owner's outcome")
	assert.Zero(t, store.Calls("renew"), "a lease of ~292 years is renewed every ~97 years, not at once")
	assert.Less(t, store.Calls("claim"), 50, "the waiter backs off; no overflowed deadline makes it spin")
}
