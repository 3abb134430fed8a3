package oncewatermill_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncewatermill"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// chanRouter runs a router over an in-process GoChannel (which redelivers
// a nacked message at once) with mws added at router level and one
// consumer handler named "h" on topic "orders".
func chanRouter(t *testing.T, mws []message.HandlerMiddleware, h message.HandlerFunc) *gochannel.GoChannel {
	t.Helper()
	pubsub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
	require.NoError(t, err)
	router.AddMiddleware(mws...)
	router.AddConsumerHandler("h", "orders", pubsub, func(msg *message.Message) error { _, err := h(msg); return err })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = router.Run(ctx) }()
	<-router.Running()
	t.Cleanup(func() { cancel(); _ = router.Close(); <-done })
	return pubsub
}

// recorder keeps what the middleware returned to the router, from a
// middleware placed outside it.
type recorder struct {
	mu   sync.Mutex
	errs []error
	got  chan struct{}
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 1000)} }

func (r *recorder) middleware(next message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		out, err := next(msg)
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
		select {
		case r.got <- struct{}{}:
		default:
		}
		return out, err
	}
}

// wait returns the first n results, once there are n.
func (r *recorder) wait(t *testing.T, n int) []error {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		if len(r.errs) >= n {
			out := append([]error(nil), r.errs[:n]...)
			r.mu.Unlock()
			return out
		}
		r.mu.Unlock()
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("fewer than %d deliveries", n)
		}
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// A failing message is redelivered by the broker at once after the router
// nacks it; without the middleware's backoff it was handled 17,102 times
// a second on GoChannel (50,223 for a message with no key). With the
// defaults (100 ms doubled, at most 1 s) a second holds a handful of
// deliveries; the bound is generous so that a slow machine cannot fail it.
func TestFailingMessageIsNotRedeliveredAtBrokerSpeed(t *testing.T) {
	cases := map[string]struct {
		uuid string
		h    message.HandlerFunc
	}{
		"HandlerError": {"order-1", func(*message.Message) ([]*message.Message, error) { return nil, errors.New("db timeout") }},
		"HandlerPanic": {"order-2", func(*message.Message) ([]*message.Message, error) { panic("cannot parse") }},
		"DeadLetterWithoutPoisonQueue": {"", func(*message.Message) ([]*message.Message, error) {
			return nil, nil
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			scope := once.New(memory.New(nil)).Scope("billing")
			pubsub := chanRouter(t, []message.HandlerMiddleware{rec.middleware, oncewatermill.Middleware(scope, nil)}, tc.h)
			require.NoError(t, pubsub.Publish("orders", message.NewMessage(tc.uuid, []byte("charge 10"))))
			rec.wait(t, 1)
			time.Sleep(time.Second)
			n := rec.count()
			t.Logf("%d deliveries in about 1 s", n)
			require.Less(t, n, 40)
		})
	}
}

// The wait grows per consecutive failure of the message, up to
// MaxRetryDelay, and is reported as the RetryAfter of the decision and of
// the *RetryError; a message's count is its own.
func TestBackoffGrowsPerConsecutiveFailureUpToMaxRetryDelay(t *testing.T) {
	const ms = time.Millisecond
	rec := newRecorder()
	var decisions []consume.Decision
	var mu sync.Mutex
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{RetryBackoff: ms, MaxRetryDelay: 8 * ms,
		OnDecision: func(_ *message.Message, d consume.Decision) { mu.Lock(); decisions = append(decisions, d); mu.Unlock() }})
	var runs atomic.Int64
	pubsub := chanRouter(t, []message.HandlerMiddleware{rec.middleware, mw}, func(msg *message.Message) ([]*message.Message, error) {
		if runs.Add(1) <= 6 {
			return nil, errors.New("db timeout")
		}
		return nil, nil
	})
	require.NoError(t, pubsub.Publish("orders", message.NewMessage("order-1", []byte("charge 10"))))
	errs := rec.wait(t, 7)
	want := []time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 8 * ms, 8 * ms}
	for i, w := range want {
		var re *oncewatermill.RetryError
		require.ErrorAs(t, errs[i], &re, "delivery %d", i+1)
		require.Equal(t, consume.ReasonHandlerError, re.Decision.Reason)
		require.Equal(t, w, re.Decision.RetryAfter, "delivery %d", i+1)
		require.Contains(t, re.Error(), "after "+w.String())
	}
	require.NoError(t, errs[6])
	mu.Lock()
	require.Len(t, decisions, 7)
	for i, w := range want {
		require.Equal(t, w, decisions[i].RetryAfter, "OnDecision sees the wait applied, delivery %d", i+1)
	}
	mu.Unlock()

	// Another message starts from the first wait.
	runs.Store(0)
	require.NoError(t, pubsub.Publish("orders", message.NewMessage("order-2", []byte("charge 11"))))
	errs = rec.wait(t, 8)
	var re *oncewatermill.RetryError
	require.ErrorAs(t, errs[7], &re)
	require.Equal(t, ms, re.Decision.RetryAfter)
}

// A RetryAfter hint (here a Hold's lease, 30 s by default) is capped by
// MaxRetryDelay, and the decision reports the capped wait, the one
// applied.
func TestRetryAfterHintIsCappedAndReportedAsApplied(t *testing.T) {
	rec := newRecorder()
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{MaxRetryDelay: 3 * time.Millisecond})
	var runs atomic.Int64
	pubsub := chanRouter(t, []message.HandlerMiddleware{rec.middleware, mw}, func(*message.Message) ([]*message.Message, error) {
		if runs.Add(1) == 1 {
			return nil, once.Hold(errors.New("awaiting the provider"))
		}
		return nil, nil
	})
	require.NoError(t, pubsub.Publish("orders", message.NewMessage("order-1", []byte("charge 10"))))
	var re *oncewatermill.RetryError
	require.ErrorAs(t, rec.wait(t, 1)[0], &re)
	require.Equal(t, consume.ReasonHeld, re.Decision.Reason)
	require.Equal(t, 3*time.Millisecond, re.Decision.RetryAfter)
	require.True(t, strings.HasSuffix(strings.SplitN(re.Error(), ": awaiting", 2)[0], "after 3ms"), re.Error())
}

// A dead letter is returned at once the first time, for a poison queue to
// move; the same message dead-lettered again (the router nacked it) waits
// the backoff first.
func TestRepeatedDeadLetterIsBackedOff(t *testing.T) {
	const ms = time.Millisecond
	rec := newRecorder()
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{RetryBackoff: ms, MaxRetryDelay: 4 * ms})
	var runs atomic.Int64
	pubsub := chanRouter(t, []message.HandlerMiddleware{rec.middleware, mw}, func(*message.Message) ([]*message.Message, error) {
		runs.Add(1)
		return nil, nil
	})
	require.NoError(t, pubsub.Publish("orders", message.NewMessage("", []byte("no key"))))
	errs := rec.wait(t, 5)
	for i, w := range []time.Duration{0, ms, 2 * ms, 4 * ms, 4 * ms} {
		var dl *oncewatermill.DeadLetterError
		require.ErrorAs(t, errs[i], &dl, "delivery %d", i+1)
		require.ErrorIs(t, dl, oncewatermill.ErrMissingKey)
		require.Equal(t, w, dl.Wait, "delivery %d", i+1)
		require.Zero(t, dl.Decision.RetryAfter)
	}
	require.Zero(t, runs.Load())
}
