package once_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

type codedError struct{ msg string }

func (e codedError) Error() string     { return e.msg }
func (e codedError) ErrorCode() string { return "do_not_honor" }

func TestFinalErrorReplaysWithItsRegisteredType(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil, once.RegisterError[*CardDeclinedError]("card_declined")).Scope("s")
	var runs atomic.Int32
	charge := func(context.Context) (string, error) {
		runs.Add(1)
		return "", once.Final(fmt.Errorf("charge: %w", &CardDeclinedError{Reason: "stolen_card"}))
	}
	_, first := once.Do(ctx, scope, "k", nil, charge)
	_, replayed := once.Do(ctx, scope, "k", nil, charge)
	for _, err := range []error{first, replayed} {
		var declined *CardDeclinedError
		require.ErrorAs(t, err, &declined)
		assert.Equal(t, "stolen_card", declined.Reason)
	}
	assert.Equal(t, "charge: card declined: stolen_card", first.Error(), "without the Final marker")
	assert.Equal(t, first.Error(), replayed.Error(), "the replay has the wrapper's text too")
	assert.Equal(t, first, replayed, "the first answer is the replay")
	assert.Equal(t, int32(1), runs.Load())
}

func TestUnregisteredFinalErrorReplaysAsStoredError(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	fn := func(context.Context) (int, error) { return 0, once.Final(codedError{"declined by issuer"}) }
	_, first := once.Do(ctx, scope, "k", nil, fn)
	_, replayed := once.Do(ctx, scope, "k", nil, fn)
	for _, err := range []error{first, replayed} {
		var stored *once.StoredError
		require.ErrorAs(t, err, &stored)
		assert.Equal(t, "do_not_honor", stored.Code)
		assert.Equal(t, "declined by issuer", stored.Message)
	}
	assert.Equal(t, first, replayed, "the first caller gets what every replay gets")
}

func TestClassifierMakesErrorsFinal(t *testing.T) {
	ctx := context.Background()
	errDeclined := errors.New("declined")
	scope := once.New(nil, once.WithClassifier(func(err error) once.Class {
		if errors.Is(err, errDeclined) {
			return once.ClassFinal
		}
		return once.ClassRetry
	})).Scope("s")
	var runs atomic.Int32
	fn := func(context.Context) (int, error) { runs.Add(1); return 0, errDeclined }
	_, _ = once.Do(ctx, scope, "k", nil, fn)
	_, err := once.Do(ctx, scope, "k", nil, fn)
	assert.EqualError(t, err, "declined")
	assert.Equal(t, int32(1), runs.Load())
}

func TestRetryableErrorRerunsFn(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	var runs atomic.Int32
	fn := func(context.Context) (string, error) {
		if runs.Add(1) == 1 {
			return "", errors.New("payrail: 503")
		}
		return "paid", nil
	}
	_, err := once.Do(ctx, scope, "k", nil, fn)
	assert.EqualError(t, err, "payrail: 503")
	v, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	assert.Equal(t, "paid", v)
	assert.Equal(t, int32(2), runs.Load())
}

func TestCancelledFnIsRetryable(t *testing.T) {
	scope := once.New(nil).Scope("s")
	ctx, cancel := context.WithCancel(context.Background())
	_, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (int, error) {
		cancel()
		return 0, ctx.Err()
	})
	assert.ErrorIs(t, err, context.Canceled)
	v, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 7, nil })
	require.NoError(t, err)
	assert.Equal(t, 7, v, "the claim was released on a detached context")
}

func TestHeldErrorKeepsKeyInProgressUntilLeaseEnds(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	scope := once.New(memory.New(&memory.Config{Now: clock.Now}), once.WithLease(30*time.Second)).Scope("s")
	var runs atomic.Int32
	errTimeout := errors.New("payrail: timeout after request left")
	fn := func(context.Context) (string, error) {
		if runs.Add(1) == 1 {
			return "", once.Hold(errTimeout)
		}
		return "paid", nil
	}
	_, err := once.Do(ctx, scope, "k", nil, fn)
	assert.Equal(t, errTimeout, err)
	clock.Advance(29 * time.Second)
	_, err = once.Do(ctx, scope, "k", nil, fn)
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	assert.True(t, inProgress.Held, "held (the default hold is one lease), not running")
	assert.Equal(t, time.Second, inProgress.HoldRemaining)
	assert.Equal(t, time.Second, inProgress.RetryAfter, "the hold left")
	clock.Advance(2 * time.Second)
	v, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	assert.Equal(t, "paid", v)
	assert.Equal(t, int32(2), runs.Load())
}

func TestResolveStoresTheOutcomeOfAHeldKey(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil, once.RegisterError[*CardDeclinedError]("card_declined")).Scope("s")
	held := func(context.Context) (string, error) { return "", once.Hold(errors.New("timeout")) }
	_, _ = once.Do(ctx, scope, "paid", once.Fingerprint("fp"), held)
	_, _ = once.Do(ctx, scope, "declined", once.Fingerprint("fp"), held)

	require.NoError(t, once.Resolve(ctx, scope, "paid", once.Fingerprint("fp"), "ch_9", nil))
	require.NoError(t, once.Resolve(ctx, scope, "declined", once.Fingerprint("fp"), "", &CardDeclinedError{Reason: "expired_card"}))

	ran := false
	fn := func(context.Context) (string, error) { ran = true; return "", nil }
	out, err := once.DoOutcome(ctx, scope, "paid", once.Fingerprint("fp"), fn)
	require.NoError(t, err)
	assert.Equal(t, "ch_9", out.Value)
	assert.Equal(t, once.Replayed, out.Status)
	_, err = once.Do(ctx, scope, "declined", once.Fingerprint("fp"), fn)
	var declined *CardDeclinedError
	require.ErrorAs(t, err, &declined)
	assert.Equal(t, "expired_card", declined.Reason)
	assert.False(t, ran)

	assert.ErrorIs(t, once.Resolve(ctx, scope, "paid", once.Fingerprint("fp"), "other", nil), once.ErrAlreadyCompleted)
	assert.ErrorIs(t, once.Resolve(ctx, scope, "paid", once.Fingerprint("xx"), "other", nil), once.ErrKeyReused)
}

func TestPanicReleasesAndRepanics(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { panic("boom") })
	})
	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 3, nil })
	require.NoError(t, err)
	assert.Equal(t, 3, v, "the panicking call's claim was released")
}

func TestRetryMarkerOverridesTheClassifier(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil, once.WithClassifier(func(error) once.Class { return once.ClassFinal })).Scope("s")
	var runs atomic.Int32
	errBusy := errors.New("busy")
	fn := func(context.Context) (int, error) {
		if runs.Add(1) == 1 {
			return 0, once.Retry(errBusy)
		}
		return 1, nil
	}
	_, err := once.Do(ctx, scope, "k", nil, fn)
	assert.Equal(t, errBusy, err, "unwrapped")
	v, err := once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	assert.Equal(t, int32(2), runs.Load())
}
