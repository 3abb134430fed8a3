package oncewatermill_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncewatermill"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/internal/testservers"
)

func amqpURL() string {
	if u := os.Getenv("ONCE_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// effects counts the handler's runs per message key.
type effects struct {
	mu   sync.Mutex
	runs map[string]int
}

func (e *effects) add(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runs == nil {
		e.runs = map[string]int{}
	}
	e.runs[key]++
	return e.runs[key]
}

func (e *effects) get(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.runs[key]
}

// rig is a Watermill router over RabbitMQ (watermill-amqp, durable queues
// named after unique topics, deleted afterwards) with a poison queue.
type rig struct {
	pub             message.Publisher
	in, out, dead   string
	outputs, poison <-chan *message.Message
}

func newRig(t *testing.T, mws []message.HandlerMiddleware, handler message.HandlerFunc) *rig {
	t.Helper()
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		if testservers.Required() {
			t.Fatalf("RabbitMQ is not usable: %v", err)
		}
		t.Skipf("RabbitMQ is not usable: %v", err)
	}
	r := &rig{in: "once-wm-" + testservers.Suffix()}
	r.out, r.dead = r.in+".out", r.in+".poison"
	t.Cleanup(func() {
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		for _, q := range []string{r.in, r.out, r.dead} {
			_, _ = ch.QueueDelete(q, false, false, false)
		}
	})
	logger := watermill.NopLogger{}
	cfg := wamqp.NewDurableQueueConfig(amqpURL())
	pub, err := wamqp.NewPublisher(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	sub, err := wamqp.NewSubscriber(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	r.pub = pub

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.outputs, err = sub.Subscribe(ctx, r.out)
	require.NoError(t, err)
	r.poison, err = sub.Subscribe(ctx, r.dead)
	require.NoError(t, err)

	router, err := message.NewRouter(message.RouterConfig{CloseTimeout: 5 * time.Second}, logger)
	require.NoError(t, err)
	poison, err := middleware.PoisonQueueWithFilter(pub, r.dead, oncewatermill.IsDeadLetter)
	require.NoError(t, err)
	router.AddMiddleware(poison)
	router.AddMiddleware(mws...)
	router.AddHandler("billing", r.in, sub, r.out, pub, handler)
	done := make(chan struct{})
	go func() { defer close(done); _ = router.Run(ctx) }()
	<-router.Running()
	t.Cleanup(func() { _ = router.Close(); <-done })
	return r
}

func (r *rig) publish(t *testing.T, uuid, payload string, metadata map[string]string) {
	t.Helper()
	m := message.NewMessage(uuid, []byte(payload))
	for k, v := range metadata {
		m.Metadata.Set(k, v)
	}
	require.NoError(t, r.pub.Publish(r.in, m))
}

func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
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

// charge is the handler under test: it counts an effect per message key
// and produces one receipt message.
func charge(fx *effects, failFirst bool) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		n := fx.add(msg.UUID)
		if failFirst && n == 1 {
			return nil, errors.New("provider 503")
		}
		return []*message.Message{message.NewMessage(watermill.NewUUID(), []byte("receipt for "+string(msg.Payload)))}, nil
	}
}

func TestMiddlewareThroughWatermillAMQP(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			middlewareCases(t, newStore)
		})
	}
}

func middlewareCases(t *testing.T, newStore func(testing.TB) backends.Store) {
	t.Run("DuplicateRunsOnceAndReproducesTheSameOutput", func(t *testing.T) {
		fx := &effects{}
		scope := once.New(newStore(t)).Scope("billing")
		r := newRig(t, []message.HandlerMiddleware{oncewatermill.Middleware(scope, nil)}, charge(fx, false))
		r.publish(t, "m1", "order o1", nil)
		r.publish(t, "m1", "order o1", nil)
		first, second := receive(t, r.outputs), receive(t, r.outputs)
		require.Equal(t, first.UUID, second.UUID, "the replayed output keeps its UUID")
		require.Equal(t, "receipt for order o1", string(second.Payload))
		require.Equal(t, 1, fx.get("m1"))
	})
	t.Run("FailedHandlerIsRedeliveredAndRunsAgain", func(t *testing.T) {
		fx := &effects{}
		scope := once.New(newStore(t)).Scope("billing")
		r := newRig(t, []message.HandlerMiddleware{oncewatermill.Middleware(scope, nil)}, charge(fx, true))
		r.publish(t, "m1", "order o1", nil)
		out := receive(t, r.outputs)
		require.Equal(t, "receipt for order o1", string(out.Payload))
		require.Equal(t, 2, fx.get("m1"), "failed once, then ran again on the redelivery")
	})
	t.Run("BadMessagesGoToThePoisonQueue", func(t *testing.T) {
		fx := &effects{}
		scope := once.New(newStore(t)).Scope("billing")
		byOrder := oncewatermill.Middleware(scope, &oncewatermill.Config{Key: oncewatermill.MetadataKey("order_id")})
		r := newRig(t, []message.HandlerMiddleware{byOrder}, charge(fx, false))
		r.publish(t, "m1", "no order id", nil)
		dead := receive(t, r.poison)
		require.Equal(t, "m1", dead.UUID)
		require.Contains(t, dead.Metadata.Get(middleware.ReasonForPoisonedKey), string(consume.ReasonInvalidKey))

		r.publish(t, "m2", "order o1, 5 EUR", map[string]string{"order_id": "o1"})
		receive(t, r.outputs)
		r.publish(t, "m3", "order o1, 6 EUR", map[string]string{"order_id": "o1"})
		dead = receive(t, r.poison)
		require.Equal(t, "m3", dead.UUID)
		require.Contains(t, dead.Metadata.Get(middleware.ReasonForPoisonedKey), string(consume.ReasonKeyReused))
		require.Equal(t, 0, fx.get("m1")+fx.get("m3"))
		require.Equal(t, 1, fx.get("m2"))
	})
}

// TestWatermillDeduplicatorDropsAFailedMessage shows the defect this
// middleware replaces: Watermill's Deduplicator records the key before the
// handler runs, so the redelivery of a message whose handler failed is
// dropped and its effect never happens.
func TestWatermillDeduplicatorDropsAFailedMessage(t *testing.T) {
	fx := &effects{}
	dedup := &middleware.Deduplicator{KeyFactory: func(m *message.Message) (string, error) { return m.UUID, nil }}
	deliveries := make(chan string, 16)
	seen := func(next message.HandlerFunc) message.HandlerFunc {
		return func(m *message.Message) ([]*message.Message, error) {
			defer func() { deliveries <- m.UUID }() // after the deduplicator and the handler
			return next(m)
		}
	}
	r := newRig(t, []message.HandlerMiddleware{seen, dedup.Middleware}, charge(fx, true))
	r.publish(t, "m1", "order o1", nil)
	require.Equal(t, "m1", <-deliveries)
	require.Equal(t, "m1", <-deliveries, "the failed message is redelivered and handled")
	require.Equal(t, 1, fx.get("m1"), "and dropped by the deduplicator: the handler ran once and failed")
}

// Over watermill-amqp, RabbitMQ requeues a nacked message at once: a
// handler that kept failing ran 5,313 times in 2 s before the middleware
// backed off. The bound is generous; the defaults give about five runs.
func TestFailingHandlerIsBackedOffOverAMQP(t *testing.T) {
	var runs atomic.Int64
	scope := once.New(memory.New(nil)).Scope("billing")
	r := newRig(t, []message.HandlerMiddleware{oncewatermill.Middleware(scope, nil)}, func(*message.Message) ([]*message.Message, error) {
		runs.Add(1)
		return nil, errors.New("db timeout")
	})
	r.publish(t, "m1", "order o1", nil)
	require.Eventually(t, func() bool { return runs.Load() > 0 }, 20*time.Second, time.Millisecond)
	time.Sleep(2 * time.Second)
	t.Logf("handler ran %d times in about 2 s", runs.Load())
	require.Less(t, runs.Load(), int64(40))
}
