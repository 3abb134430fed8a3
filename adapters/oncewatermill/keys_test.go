package oncewatermill_test

import (
	"context"
	"errors"
	"strings"
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

func next(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case m := <-ch:
		m.Ack()
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no message")
		return nil
	}
}

// The README adds the middleware at router level. Two handlers read the
// same topic: with a key of the UUID alone, the second handler's run was a
// replay of the first's, so it never ran and its output topic received the
// first handler's messages. The default keys include the handler name.
func TestRouterLevelMiddlewareKeepsHandlersApart(t *testing.T) {
	for name, key := range map[string]func(*message.Message) (string, error){
		"UUIDKey":     nil,
		"MetadataKey": oncewatermill.MetadataKey("order_id"),
	} {
		t.Run(name, func(t *testing.T) {
			pubsub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
			router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
			require.NoError(t, err)
			scope := once.New(memory.New(nil)).Scope("orders")
			router.AddMiddleware(oncewatermill.Middleware(scope, &oncewatermill.Config{Key: key}))
			var billing, shipping atomic.Int64
			router.AddHandler("billing", "orders", pubsub, "billing.out", pubsub, func(msg *message.Message) ([]*message.Message, error) {
				billing.Add(1)
				return []*message.Message{message.NewMessage("r-"+msg.UUID, []byte("invoice"))}, nil
			})
			// A handler name that DerivedKey cannot use as it is.
			router.AddHandler("Shipping-EU", "orders", pubsub, "shipping.out", pubsub, func(msg *message.Message) ([]*message.Message, error) {
				shipping.Add(1)
				return []*message.Message{message.NewMessage("s-"+msg.UUID, []byte("parcel label"))}, nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			shipOut, err := pubsub.Subscribe(ctx, "shipping.out")
			require.NoError(t, err)
			billOut, err := pubsub.Subscribe(ctx, "billing.out")
			require.NoError(t, err)
			done := make(chan struct{})
			go func() { defer close(done); _ = router.Run(ctx) }()
			<-router.Running()
			defer func() { _ = router.Close(); <-done }()
			for range 2 { // the second delivery is a duplicate: replayed
				m := message.NewMessage("order-1", []byte("order 1"))
				m.Metadata.Set("order_id", "o1")
				require.NoError(t, pubsub.Publish("orders", m))
				s, b := next(t, shipOut), next(t, billOut)
				require.Equal(t, "s-order-1", s.UUID)
				require.Equal(t, "parcel label", string(s.Payload))
				require.Equal(t, "r-order-1", b.UUID)
				require.Equal(t, "invoice", string(b.Payload))
			}
			require.Equal(t, int64(1), billing.Load())
			require.Equal(t, int64(1), shipping.Load())
		})
	}
}

// The default key is a valid key whatever the handler name and UUID: at
// most 255 bytes, no control characters.
func TestDefaultKeyIsValidForAnyHandlerNameAndUUID(t *testing.T) {
	var keys []string
	var keyErrs []error
	scope := once.New(memory.New(nil)).Scope("orders")
	rec := newRecorder()
	pubsub := gochannel.NewGoChannel(gochannel.Config{}, watermill.NopLogger{})
	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, watermill.NopLogger{})
	require.NoError(t, err)
	capture := func(next message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			k, err := oncewatermill.UUIDKey(msg) // not require: this is the router's goroutine
			keys, keyErrs = append(keys, k), append(keyErrs, err)
			return next(msg)
		}
	}
	router.AddMiddleware(rec.middleware, capture, oncewatermill.Middleware(scope, nil))
	name := strings.Repeat("handler\tñ ", 40)
	router.AddConsumerHandler(name, "orders", pubsub, func(*message.Message) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = router.Run(ctx) }()
	<-router.Running()
	defer func() { _ = router.Close(); <-done }()
	require.NoError(t, pubsub.Publish("orders", message.NewMessage(strings.Repeat("u\x01", 200), []byte("x"))))
	require.NoError(t, rec.wait(t, 1)[0])
	require.Len(t, keys, 1)
	require.NoError(t, keyErrs[0])
	require.NoError(t, once.ValidateKey(keys[0]))
	require.LessOrEqual(t, len(keys[0]), 255)
}

// Outside a router the message names no handler: the default key refuses
// it with ErrNoHandlerName, a misconfiguration (RetryLater), and the
// handler does not run, rather than every handler sharing one key.
func TestDefaultKeyWithoutHandlerName(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("orders")
	runs := 0
	h := oncewatermill.Middleware(scope, &oncewatermill.Config{MaxRetryDelay: -1})(func(*message.Message) ([]*message.Message, error) {
		runs++
		return nil, nil
	})
	_, err := h(message.NewMessage("m1", []byte("x")))
	var re *oncewatermill.RetryError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, oncewatermill.ErrNoHandlerName)
	require.Equal(t, consume.ReasonMisconfigured, re.Decision.Reason)
	require.Zero(t, runs)
}

// A Key or Fingerprint that panics is a bug of the service, not of the
// message (a bad deploy panics on every message): it is answered RetryLater,
// consume.ReasonMisconfigured, with a *ConfigPanicError, backed off, not
// dead-lettered; the handler does not run and the middleware does not
// panic.
func TestPanickingKeyOrFingerprintIsRetriedLater(t *testing.T) {
	byUUID := func(m *message.Message) (string, error) { return m.UUID, nil }
	for name, cfg := range map[string]*oncewatermill.Config{
		"Key":         {Key: func(*message.Message) (string, error) { panic("bad header") }},
		"Fingerprint": {Key: byUUID, Fingerprint: func(*message.Message) once.Fingerprint { panic(errors.New("bad payload")) }},
	} {
		t.Run(name, func(t *testing.T) {
			scope := once.New(memory.New(nil)).Scope("orders")
			runs := 0
			var seen []consume.Decision
			cfg.OnDecision = func(_ *message.Message, d consume.Decision) { seen = append(seen, d) }
			cfg.RetryBackoff = time.Millisecond
			h := oncewatermill.Middleware(scope, cfg)(func(*message.Message) ([]*message.Message, error) {
				runs++
				return nil, nil
			})
			var err error
			require.NotPanics(t, func() { _, err = h(message.NewMessage("m1", []byte("x"))) })
			require.False(t, oncewatermill.IsDeadLetter(err), "%v", err)
			var re *oncewatermill.RetryError
			require.ErrorAs(t, err, &re)
			require.Equal(t, consume.ReasonMisconfigured, re.Decision.Reason)
			require.Equal(t, time.Millisecond, re.Decision.RetryAfter, "backed off")
			var pe *oncewatermill.ConfigPanicError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, name, pe.Func)
			require.NotEmpty(t, pe.Stack)
			require.Len(t, seen, 1)
			require.Equal(t, consume.RetryLater, seen[0].Action)
			require.Equal(t, consume.ReasonMisconfigured, seen[0].Reason)
			require.Zero(t, runs)
		})
	}
}

// A panicking OnDecision changes nothing: the message is handled, its
// produced messages returned, and a duplicate replayed.
func TestPanickingOnDecisionChangesNothing(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("orders")
	runs := 0
	cfg := &oncewatermill.Config{
		Key:        func(m *message.Message) (string, error) { return m.UUID, nil },
		OnDecision: func(*message.Message, consume.Decision) { panic("metrics down") },
	}
	h := oncewatermill.Middleware(scope, cfg)(func(*message.Message) ([]*message.Message, error) {
		runs++
		return []*message.Message{message.NewMessage("out-1", []byte("receipt"))}, nil
	})
	for range 2 {
		var out []*message.Message
		var err error
		require.NotPanics(t, func() { out, err = h(message.NewMessage("m1", []byte("x"))) })
		require.NoError(t, err)
		require.Len(t, out, 1)
		require.Equal(t, "out-1", out[0].UUID)
	}
	require.Equal(t, 1, runs)
}
