package once_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/memory"
)

// panicLease is the lease of the tests that need renewals while fn runs;
// fn runs until the store has seen them. A renewal is sent every third of
// it, and must leave before the watchdog's deadline (a fifth of it before
// the lease ends): the lease is long enough that a timer firing late on a
// loaded machine still meets it.
const panicLease = 600 * time.Millisecond

// untilRenewed blocks until store has seen n renewals (10 s at most, so a
// broken renewer fails the test instead of hanging it).
func untilRenewed(t *testing.T, store *faultStore, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for store.Calls("renew") < n {
		if time.Now().After(deadline) {
			t.Errorf("the claim was not renewed %d times", n)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

type panickingCodec struct {
	marshal, unmarshal bool
}

func (c panickingCodec) Marshal(v any) ([]byte, error) {
	if c.marshal {
		panic("codec: Marshal")
	}
	return json.Marshal(v)
}

func (c panickingCodec) Unmarshal(data []byte, v any) error {
	if c.unmarshal {
		panic("codec: Unmarshal")
	}
	return json.Unmarshal(data, v)
}

type explodingValue struct{}

func (explodingValue) MarshalJSON() ([]byte, error) { panic("value: MarshalJSON") }

type explodingError struct{ inText, inCode bool }

func (e explodingError) Error() string {
	if e.inText {
		panic("error: Error")
	}
	return "exploding"
}

func (e explodingError) ErrorCode() string {
	if e.inCode {
		panic("error: ErrorCode")
	}
	return "exploding"
}

type nilDerefError struct{ reason string }

func (e *nilDerefError) Error() string { return e.reason } // panics on a nil receiver

// requireSettled proves that no renewal of the claim is sent after the call
// ended, over three renewal intervals by the store's clock, and that the key is claimable again
// at once (released) or replays (recorded: a value, or a final error such
// as the one the core stores for an outcome that cannot be encoded).
func requireSettled(t *testing.T, store *faultStore, scope once.Scope, key string, recorded bool) {
	t.Helper()
	renewals := store.Calls("renew")
	backendtest.Elapse(t, store.Store, panicLease)
	assert.Equal(t, renewals, store.Calls("renew"), "no renewal is sent after Do returned or panicked")
	ran := false
	out, err := once.DoOutcome(context.Background(), scope, key, nil, func(context.Context) (string, error) { ran = true; return "again", nil })
	if recorded {
		assert.Equal(t, once.Replayed, out.Status, "a recorded key replays (%v)", err)
		assert.False(t, ran, "a recorded key never runs fn again")
		return
	}
	require.NoError(t, err)
	assert.True(t, ran, "a released key runs fn again at once")
}

// TestAPanicOutsideFnNeverLeavesAKeyStuck: a panic in a hook that runs
// under the claim propagates out of Do, never leaves the claim renewing,
// and settles the key as the design says. Before fn returned (the observer
// on claimed), and in the classifier (fn's error has no class), the claim
// is released. Once fn returned, the panic changes nothing of what is
// stored: an outcome that the codec or the error's methods cannot encode
// (or the codec cannot decode back) is stored as a final error saying so,
// as an encoding error would be, and an observer's panic leaves the
// outcome recorded, released or held as it would have been.
func TestAPanicOutsideFnNeverLeavesAKeyStuck(t *testing.T) {
	type fnResult struct {
		v   any
		err error
	}
	cases := []struct {
		name     string
		opts     []once.Option
		fn       fnResult
		recorded bool // the outcome is stored, and the panic re-raised after
	}{
		{name: "codec Marshal", opts: []once.Option{once.WithCodec(panickingCodec{marshal: true})}, fn: fnResult{v: "v"}, recorded: true},
		{name: "codec Unmarshal of the first answer", opts: []once.Option{once.WithCodec(panickingCodec{unmarshal: true})}, fn: fnResult{v: "v"}, recorded: true},
		{name: "value MarshalJSON", fn: fnResult{v: explodingValue{}}, recorded: true},
		{name: "final error's Error", fn: fnResult{err: once.Final(explodingError{inText: true})}, recorded: true},
		{name: "final error's ErrorCode", fn: fnResult{err: once.Final(explodingError{inCode: true})}, recorded: true},
		{name: "Final of a typed nil", fn: fnResult{err: once.Final((*nilDerefError)(nil))}, recorded: true},
		{name: "classifier", opts: []once.Option{once.WithClassifier(func(error) once.Class { panic("classifier") })},
			fn: fnResult{err: errors.New("unmarked")}},
		{name: "observer on claimed", opts: []once.Option{once.WithObserver(panicOn(once.EventClaimed))}, fn: fnResult{v: "v"}},
		{name: "observer on executed", opts: []once.Option{once.WithObserver(panicOn(once.EventExecuted))}, fn: fnResult{v: "v"}, recorded: true},
		{name: "observer on recorded", opts: []once.Option{once.WithObserver(panicOn(once.EventRecorded))}, fn: fnResult{v: "v"}, recorded: true},
		{name: "observer on released", opts: []once.Option{once.WithObserver(panicOn(once.EventReleased))}, fn: fnResult{err: errors.New("retry")}},
		{name: "observer on held", opts: []once.Option{once.WithObserver(panicOn(once.EventHeld))}, fn: fnResult{err: once.Hold(errors.New("held"))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store := newFaultStore(memory.New(nil))
			scope := once.New(store, append([]once.Option{once.WithLease(panicLease)}, c.opts...)...).Scope("s")
			fn := func(context.Context) (any, error) {
				untilRenewed(t, store, 1)
				return c.fn.v, c.fn.err
			}
			require.Panics(t, func() { _, _ = once.Do(context.Background(), scope, "k", nil, fn) })
			if c.name != "observer on claimed" { // fn never ran
				require.Positive(t, store.Calls("renew"), "the claim was renewing while fn ran")
			}
			if c.name == "observer on held" {
				renewals := store.Calls("renew")
				backendtest.Elapse(t, store.Store, panicLease)
				assert.Equal(t, renewals, store.Calls("renew"))
				return // a held key stays claimed until its lease ends, by design
			}
			plain := once.New(store, once.WithLease(panicLease)).Scope("s")
			requireSettled(t, store, plain, "k", c.recorded)
		})
	}
}

func panicOn(kind once.EventKind) once.Observer {
	return func(_ context.Context, e once.Event) {
		if e.Kind == kind {
			panic("observer: " + kind.String())
		}
	}
}

// An observer that panics on the renewal timer's goroutine must not crash
// the process: the panic is recovered there, renewal goes on, and the call
// completes normally.
func TestObserverPanicOnTheRenewalTimerDoesNotCrash(t *testing.T) {
	store := newFaultStore(memory.New(nil))
	scope := once.New(store, once.WithLease(panicLease), once.WithObserver(panicOn(once.EventRenewed))).Scope("s")
	v, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (string, error) {
		untilRenewed(t, store, 3)
		return "done", nil
	})
	require.NoError(t, err)
	assert.Equal(t, "done", v)
	assert.GreaterOrEqual(t, store.Calls("renew"), 3, "renewal went on after the observer panicked")
	requireSettled(t, store, once.New(store).Scope("s"), "k", true)
}

// The panic that escapes Do is the original one, not a panic of the cleanup.
func TestThePanicThatEscapesIsTheOriginal(t *testing.T) {
	scope := once.New(nil, once.WithCodec(panickingCodec{marshal: true})).Scope("s")
	assert.PanicsWithValue(t, "codec: Marshal", func() {
		_, _ = once.Do(context.Background(), scope, "k", nil, func(context.Context) (json.RawMessage, error) { return nil, nil })
	})
}

// A store whose Renew panics (a user's wrapper around a backend) runs on
// the renewer's timer goroutine, where nothing could recover the panic: it
// must not crash the process. The panic counts as a failed renewal, so the
// renewer fails closed and cancels fn once the lease may lapse.
func TestPanicInStoreRenewDoesNotCrashTheProcess(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	store.renew = func(context.Context, backends.RenewParams) (bool, error) { panic("renew exploded") }
	var events []once.Event
	var mu sync.Mutex
	scope := once.New(store, once.WithLease(panicLease), once.WithObserver(func(_ context.Context, e once.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	})).Scope("s")

	_, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (int, error) {
		<-ctx.Done() // cancelled when renewal fails closed
		return 0, ctx.Err()
	})
	require.ErrorIs(t, err, once.ErrLeaseLost)
	require.Positive(t, store.Calls("renew"))
	mu.Lock()
	defer mu.Unlock()
	var storeErr error
	for _, e := range events {
		if e.Kind == once.EventStoreError && e.Op == "renew" {
			storeErr = e.Err
		}
	}
	require.ErrorContains(t, storeErr, "renew exploded", "the panic is reported as the renewal's store error")
}

// TestAHookPanicAfterFnReturnedNeverRunsFnAgain: once fn has returned, its
// side effect has happened, so a hook that panics afterwards must not
// release the claim (the next call would run fn again: a second charge).
// The outcome is stored as it would have been without the panic (an
// outcome whose encoding or decoding panics as for a codec error: a final
// error saying so), the next call replays it, and Do panics with the hook's
// value.
func TestAHookPanicAfterFnReturnedNeverRunsFnAgain(t *testing.T) {
	failOnce := func(f *faultStore) {
		failed := false
		f.complete = func(ctx context.Context, p backends.CompleteParams) (bool, error) {
			if !failed { // the hook runs under the claim's write lock: no race
				failed = true
				return false, errors.New("connection reset by peer")
			}
			return f.Store.Complete(ctx, p)
		}
	}
	for _, c := range []struct {
		name    string
		opts    []once.Option
		store   func(*faultStore)
		v       any
		panic   string
		replay  any    // the value a replay answers, or
		stored  string // the final error a replay answers
		attempt int    // Complete calls
	}{
		{name: "observer on executed", opts: []once.Option{once.WithObserver(panicOn(once.EventExecuted))},
			v: "v", panic: "observer: executed", replay: "v", attempt: 1},
		{name: "observer on a failed completion attempt", opts: []once.Option{once.WithObserver(panicOn(once.EventStoreError))}, store: failOnce,
			v: "v", panic: "observer: store_error", replay: "v", attempt: 2},
		{name: "codec Marshal", opts: []once.Option{once.WithCodec(panickingCodec{marshal: true})},
			v: "v", panic: "codec: Marshal", stored: "once: outcome cannot be encoded: panic: codec: Marshal", attempt: 1},
		{name: "value MarshalJSON", v: explodingValue{},
			panic: "value: MarshalJSON", stored: "once: outcome cannot be encoded: panic: value: MarshalJSON", attempt: 1},
		{name: "codec Unmarshal of the first answer", opts: []once.Option{once.WithCodec(panickingCodec{unmarshal: true})},
			v: "v", panic: "codec: Unmarshal", stored: "once: outcome cannot be decoded: panic: codec: Unmarshal", attempt: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			store := newFaultStore(memory.New(nil))
			if c.store != nil {
				store.set(c.store)
			}
			effects := 0
			fn := func(context.Context) (any, error) { effects++; return c.v, nil }
			require.PanicsWithValue(t, c.panic, func() {
				_, _ = once.Do(ctx, once.New(store, c.opts...).Scope("s"), "k", nil, fn)
			})
			require.Equal(t, c.attempt, store.Calls("complete"), "the outcome was stored before the panic escaped")
			out, err := once.DoOutcome(ctx, once.New(store).Scope("s"), "k", nil, fn)
			require.Equal(t, 1, effects, "the side effect happened twice for one key")
			require.Equal(t, once.Replayed, out.Status)
			if c.stored != "" {
				var stored *once.StoredError
				require.ErrorAs(t, err, &stored)
				require.Equal(t, c.stored, err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.replay, out.Value)
		})
	}
}
