package oncewatermill_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncewatermill"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// A handler that fails at the deadline of watermill's middleware.Timeout
// placed outside the middleware: the message's context has ended
// (DeadlineExceeded) when the middleware returns, and the wait was skipped
// for any ended context, so the message was redelivered at the broker's
// speed (827 handler runs a second). Only a cancellation (a shutdown)
// skips the wait now; the failure is backed off, as with Timeout inside.
// The bound is generous so that a slow machine cannot fail it.
func TestFailureAtTimeoutDeadlineIsBackedOff(t *testing.T) {
	for _, name := range []string{"TimeoutOutsideReturnsCtxErr", "TimeoutOutsideReturnsOwnErr", "TimeoutInside"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder()
			var runs atomic.Int64
			scope := once.New(memory.New(nil)).Scope("billing")
			h := func(msg *message.Message) ([]*message.Message, error) {
				runs.Add(1)
				<-msg.Context().Done()
				if name == "TimeoutOutsideReturnsCtxErr" {
					return nil, msg.Context().Err()
				}
				return nil, errors.New("db: query failed")
			}
			mws := []message.HandlerMiddleware{rec.middleware, middleware.Timeout(time.Millisecond), oncewatermill.Middleware(scope, nil)}
			if name == "TimeoutInside" {
				mws = []message.HandlerMiddleware{rec.middleware, oncewatermill.Middleware(scope, nil), middleware.Timeout(time.Millisecond)}
			}
			pubsub := chanRouter(t, mws, h)
			require.NoError(t, pubsub.Publish("orders", message.NewMessage("order-1", []byte("charge 10"))))
			var re *oncewatermill.RetryError
			require.ErrorAs(t, rec.wait(t, 1)[0], &re)
			require.Equal(t, oncewatermill.DefaultRetryBackoff, re.Decision.RetryAfter, "the wait applied")
			time.Sleep(time.Second)
			n := runs.Load()
			t.Logf("%d handler runs in about 1 s", n)
			require.Less(t, n, int64(40))
		})
	}
}

// A message whose context is cancelled (a shutdown) is returned at once,
// with a RetryAfter of zero: nothing failed that a wait would pace.
func TestCancelledMessageIsReturnedWithoutWait(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{RetryBackoff: time.Hour, MaxRetryDelay: time.Hour,
		Key: func(m *message.Message) (string, error) { return m.UUID, nil }})
	ctx, cancel := context.WithCancel(context.Background())
	h := mw(func(msg *message.Message) ([]*message.Message, error) {
		cancel()
		return nil, msg.Context().Err()
	})
	msg := message.NewMessage("order-1", []byte("x"))
	msg.SetContext(ctx)
	_, err := h(msg)
	var re *oncewatermill.RetryError
	require.ErrorAs(t, err, &re)
	require.Zero(t, re.Decision.RetryAfter)
}

// Distinct messages with neither key nor UUID (a foreign publisher over
// watermill-amqp sets no _watermill_message_uuid) shared one failure count,
// never reset since they are never acknowledged: each new one was "the
// same message dead-lettered again" and waited. The payload tells them
// apart now; the same payload again is the same message, backed off.
func TestDistinctMessagesWithoutKeyOrUUIDAreCountedApart(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{RetryBackoff: time.Millisecond, MaxRetryDelay: 4 * time.Millisecond,
		Key: func(*message.Message) (string, error) { return "", oncewatermill.ErrMissingKey }})
	h := mw(func(*message.Message) ([]*message.Message, error) { return nil, nil })
	for i := range 6 {
		_, err := h(message.NewMessage("", []byte(fmt.Sprintf("distinct payload %d", i))))
		var dl *oncewatermill.DeadLetterError
		require.ErrorAs(t, err, &dl, "message %d", i+1)
		require.Zero(t, dl.Wait, "the first dead letter of message %d", i+1)
	}
	_, err := h(message.NewMessage("", []byte("distinct payload 0")))
	var dl *oncewatermill.DeadLetterError
	require.ErrorAs(t, err, &dl)
	require.Equal(t, time.Millisecond, dl.Wait, "message 1 dead-lettered again")
}

// The first dead letter of a message is returned at once, whatever
// RetryLater failures came before it: dead letters are counted apart
// (8 handler errors then a Reject made the first dead letter wait 128x
// RetryBackoff). The next dead letter of it waits RetryBackoff.
func TestFirstDeadLetterAfterRetriesIsNotDelayed(t *testing.T) {
	const ms = time.Millisecond
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{MaxRetryDelay: time.Minute, RetryBackoff: ms,
		Key: func(*message.Message) (string, error) { return "k1", nil }})
	calls := 0
	h := mw(func(*message.Message) ([]*message.Message, error) {
		calls++
		if calls <= 8 {
			return nil, errors.New("transient")
		}
		return nil, consume.Reject(errors.New("bad payload"))
	})
	for i := range 8 {
		_, err := h(message.NewMessage("u1", []byte("x")))
		var re *oncewatermill.RetryError
		require.ErrorAs(t, err, &re, "delivery %d", i+1)
		require.Equal(t, ms<<i, re.Decision.RetryAfter, "delivery %d", i+1)
	}
	for i, want := range []time.Duration{0, ms} {
		_, err := h(message.NewMessage("u1", []byte("x")))
		var dl *oncewatermill.DeadLetterError
		require.ErrorAs(t, err, &dl)
		require.Equal(t, want, dl.Wait, "dead letter %d", i+1)
	}
}

// The failure counts are keyed by a fixed-size digest: 12,000 failing
// messages with 16 KiB UUIDs kept 246 MiB when the raw UUID was the key.
func TestFailureCountsDoNotKeepLongUUIDs(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("billing")
	mw := oncewatermill.Middleware(scope, &oncewatermill.Config{MaxRetryDelay: -1,
		Key: func(m *message.Message) (string, error) { return "k" + m.Metadata.Get("n"), nil }})
	h := mw(func(*message.Message) ([]*message.Message, error) { return nil, errors.New("fail") })
	const messages = 4000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pad := strings.Repeat("u", 16<<10)
	for i := range messages {
		m := message.NewMessage(fmt.Sprintf("%d-%s", i, pad), []byte("x"))
		m.Metadata.Set("n", fmt.Sprint(i))
		_, err := h(m)
		require.Error(t, err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap growth after %d failing messages with 16 KiB UUIDs: %d KiB", messages, growth>>10)
	require.Less(t, growth, int64(16<<20), "the UUIDs (%d MiB) are kept", messages*16>>10)
	runtime.KeepAlive(h)
}
