package once_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// counter is an fn that counts its runs and returns a fixed order.
type counter struct{ runs atomic.Int32 }

func (c *counter) fn(ctx context.Context) (order, error) {
	c.runs.Add(1)
	return order{ID: "o-1", Amount: 4200}, nil
}

func TestFirstCallRunsThenReplays(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("user-1")
	var c counter

	first, err := once.DoOutcome(ctx, scope, "k", once.Fingerprint("fp"), c.fn)
	require.NoError(t, err)
	assert.Equal(t, order{ID: "o-1", Amount: 4200}, first.Value)
	assert.Equal(t, once.Recorded, first.Status)

	for range 3 {
		again, err := once.DoOutcome(ctx, scope, "k", once.Fingerprint("fp"), c.fn)
		require.NoError(t, err)
		assert.Equal(t, first.Value, again.Value)
		assert.Equal(t, once.Replayed, again.Status)
	}
	assert.Equal(t, int32(1), c.runs.Load())
}

func TestKeyReusedWithAnotherFingerprint(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("user-1")
	var c counter
	_, err := once.Do(ctx, scope, "k", once.Fingerprint("request-A"), c.fn)
	require.NoError(t, err)

	v, err := once.Do(ctx, scope, "k", once.Fingerprint("request-B"), c.fn)
	require.ErrorIs(t, err, once.ErrKeyReused)
	assert.Equal(t, order{}, v, "never the stored outcome")
	assert.NotContains(t, err.Error(), "request-A", "never echoes stored data")
	assert.NotContains(t, err.Error(), "o-1")

	_, err = once.Do(ctx, scope, "k", nil, c.fn)
	assert.NoError(t, err, "a zero fingerprint does not check")
	assert.Equal(t, int32(1), c.runs.Load())
}

func TestKeyReusedWhileInProgress(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	started, finish, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = once.Do(ctx, scope, "k", once.Fingerprint("A"), func(context.Context) (int, error) {
			close(started)
			<-finish
			return 1, nil
		})
	}()
	<-started
	defer func() { close(finish); <-done }() // no goroutine of this test outlives it
	_, err := once.Do(ctx, scope, "k", once.Fingerprint("B"), func(context.Context) (int, error) { return 2, nil })
	assert.ErrorIs(t, err, once.ErrKeyReused)
	_, err = once.Do(ctx, scope, "k", once.Fingerprint("A"), func(context.Context) (int, error) { return 2, nil })
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	assert.ErrorIs(t, err, once.ErrInProgress)
	assert.Equal(t, time.Second, inProgress.RetryAfter)
	assert.Greater(t, inProgress.LeaseRemaining, 20*time.Second)
}

func TestScopesNeverCollide(t *testing.T) {
	ctx := context.Background()
	k := once.New(nil)
	var runs atomic.Int32
	fn := func(context.Context) (int32, error) { return runs.Add(1), nil }
	a, err := once.Do(ctx, k.Scope("a:b"), "c", nil, fn)
	require.NoError(t, err)
	b, err := once.Do(ctx, k.Scope("a"), "b:c", nil, fn)
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	again, err := once.Do(ctx, k.Scope("a:b"), "c", nil, fn)
	require.NoError(t, err)
	assert.Equal(t, a, again)
}

func TestRetentionExpiry(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k := once.New(memory.New(&memory.Config{Now: clock.Now}), once.WithRetention(time.Hour))
	var c counter
	_, err := once.Do(ctx, k.Scope("s"), "k", nil, c.fn)
	require.NoError(t, err)
	clock.Advance(59 * time.Minute)
	_, err = once.Do(ctx, k.Scope("s"), "k", nil, c.fn)
	require.NoError(t, err)
	assert.Equal(t, int32(1), c.runs.Load(), "within retention: replay")
	clock.Advance(2 * time.Minute)
	out, err := once.DoOutcome(ctx, k.Scope("s"), "k", once.Fingerprint("new"), c.fn)
	require.NoError(t, err)
	assert.NotEqual(t, once.Replayed, out.Status)
	assert.Equal(t, int32(2), c.runs.Load(), "after retention: a new intent")
}

func TestPerCallRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k := once.New(memory.New(&memory.Config{Now: clock.Now}))
	var c counter
	_, err := once.Do(ctx, k.Scope("s").With(once.WithRetention(time.Minute)), "k", nil, c.fn)
	require.NoError(t, err)
	clock.Advance(2 * time.Minute)
	_, err = once.Do(ctx, k.Scope("s"), "k", nil, c.fn)
	require.NoError(t, err)
	assert.Equal(t, int32(2), c.runs.Load())
}

func TestDefaultRetentionIs24Hours(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k := once.New(memory.New(&memory.Config{Now: clock.Now}))
	var c counter
	_, err := once.Do(ctx, k.Scope("s"), "k", nil, c.fn)
	require.NoError(t, err)
	clock.Advance(24*time.Hour - time.Second)
	_, err = once.Do(ctx, k.Scope("s"), "k", nil, c.fn)
	require.NoError(t, err)
	assert.Equal(t, int32(1), c.runs.Load())
	clock.Advance(2 * time.Second)
	_, err = once.Do(ctx, k.Scope("s"), "k", nil, c.fn)
	require.NoError(t, err)
	assert.Equal(t, int32(2), c.runs.Load())
}

func TestOutcomeTooLarge(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil, once.WithMaxOutcomeSize(64)).Scope("s")
	var runs atomic.Int32
	big := func(context.Context) (string, error) {
		runs.Add(1)
		return string(make([]byte, 100)), nil
	}
	v, err := once.Do(ctx, scope, "k", nil, big)
	var tooLarge *once.OutcomeTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.Equal(t, 64, tooLarge.Limit)
	assert.Len(t, v, 100, "the first caller still gets fn's value")
	_, err = once.Do(ctx, scope, "k", nil, big)
	assert.ErrorAs(t, err, new(*once.OutcomeTooLargeError), "retries are answered, fn does not run again")
	assert.Equal(t, int32(1), runs.Load())
}

func TestUnencodableValueIsAnsweredNotRerun(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	var runs atomic.Int32
	fn := func(context.Context) (chan int, error) { runs.Add(1); return make(chan int), nil }
	_, err := once.Do(ctx, scope, "k", nil, fn)
	require.Error(t, err)
	_, err2 := once.Do(ctx, scope, "k", nil, fn)
	var stored *once.StoredError
	require.ErrorAs(t, err2, &stored)
	assert.Equal(t, err.Error(), stored.Message)
	assert.Equal(t, int32(1), runs.Load())
}

func TestUndecodableReplay(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) { return "text", nil })
	require.NoError(t, err)
	ran := false
	_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { ran = true; return 1, nil })
	assert.ErrorIs(t, err, once.ErrUndecodable)
	assert.False(t, ran)
}

func TestWaitReturnsTheOwnersOutcome(t *testing.T) {
	for name, newScope := range map[string]func() once.Scope{
		"watcher": func() once.Scope { return once.New(nil).Scope("s") },
		"polling": func() once.Scope { return once.New(newFaultStore(memory.New(nil))).Scope("s") },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scope := newScope()
			started, finish := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) {
					close(started)
					<-finish
					return "owner", nil
				})
			}()
			<-started
			time.AfterFunc(50*time.Millisecond, func() { close(finish) })
			out, err := once.DoOutcome(ctx, scope.With(once.WithWait(5*time.Second)), "k", nil,
				func(context.Context) (string, error) { return "duplicate", nil })
			require.NoError(t, err)
			assert.Equal(t, "owner", out.Value)
			assert.Equal(t, once.Replayed, out.Status)
			wg.Wait()
		})
	}
}

func TestWaitRunsFnWhenOwnerReleases(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	started, finish := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) {
			close(started)
			<-finish
			return "", errors.New("upstream 503")
		})
	}()
	<-started
	time.AfterFunc(30*time.Millisecond, func() { close(finish) })
	v, err := once.Do(ctx, scope.With(once.WithWait(5*time.Second)), "k", nil,
		func(context.Context) (string, error) { return "second", nil })
	require.NoError(t, err)
	assert.Equal(t, "second", v)
}

func TestWaitGivesUpWithInProgress(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("s")
	started, finish := make(chan struct{}), make(chan struct{})
	defer close(finish)
	go func() {
		_, _ = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) {
			close(started)
			<-finish
			return 1, nil
		})
	}()
	<-started
	_, err := once.Do(ctx, scope.With(once.WithWait(80*time.Millisecond)), "k", nil,
		func(context.Context) (int, error) { return 2, nil })
	assert.ErrorIs(t, err, once.ErrInProgress)

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = once.Do(cctx, scope.With(once.WithWait(time.Minute)), "k", nil,
		func(context.Context) (int, error) { return 2, nil })
	assert.ErrorIs(t, err, context.Canceled)
}

func TestZeroScopeAndNilFn(t *testing.T) {
	ctx := context.Background()
	_, err := once.Do(ctx, once.Scope{}, "k", nil, func(context.Context) (int, error) { return 1, nil })
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, "scope", invalid.Field)
	_, err = once.Do[int](ctx, once.New(nil).Scope("s"), "k", nil, nil)
	require.ErrorAs(t, err, &invalid)
	assert.Equal(t, "fn", invalid.Field)
}
