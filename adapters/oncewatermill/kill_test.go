package oncewatermill_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/internal/adaptertest"
	"github.com/stagedoor/once/adapters/oncewatermill"
	"github.com/stagedoor/once/internal/testservers"
)

func TestMain(m *testing.M) {
	if adaptertest.IsWorker() {
		if err := runWorker(); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(2)
		}
		return
	}
	os.Exit(m.Run())
}

// TestKilledRoutersProduceOneEffectPerMessage publishes 12 orders twice
// each (one UUID per order) to a queue consumed by two router processes
// that die by SIGKILL — once per order chosen, either after the claim and
// before the effect, or after the outcome is recorded and before the
// router acknowledges — and are restarted. RabbitMQ requeues a dead
// router's message at once. When the queue is empty with no router left,
// the ledger holds one effect per order. (The effect is not in the
// store's transaction: a kill between the effect and the record would
// repeat it after the lease, so the routers do not die there.)
func TestKilledRoutersProduceOneEffectPerMessage(t *testing.T) {
	for _, kind := range []string{"postgres", "redis"} {
		t.Run(kind, func(t *testing.T) {
			const orders = 12
			conn, err := amqp.Dial(amqpURL())
			if err != nil {
				if testservers.Required() {
					t.Fatalf("RabbitMQ is not usable: %v", err)
				}
				t.Skipf("RabbitMQ is not usable: %v", err)
			}
			defer conn.Close()
			topic := "once-wmk-" + testservers.Suffix()
			ch, err := conn.Channel()
			require.NoError(t, err)
			// The queue exists before the publish, as watermill-amqp's
			// subscriber declares it (durable, no arguments).
			_, err = ch.QueueDeclare(topic, true, false, false, false, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _, _ = ch.QueueDelete(topic, false, false, false) })
			pub, err := wamqp.NewPublisher(wamqp.NewDurableQueueConfig(amqpURL()), watermill.NopLogger{})
			require.NoError(t, err)
			defer pub.Close()
			for i := range orders {
				for range 2 {
					require.NoError(t, pub.Publish(topic, message.NewMessage("order-"+strconv.Itoa(i), []byte("charge "+strconv.Itoa(i)))))
				}
			}
			spec := adaptertest.NewStoreSpec(t, kind)
			ledger := adaptertest.NewLedger(t)
			fleet := &adaptertest.Fleet{Workers: 2, Env: append(spec.Env(), "ONCE_WORKER_TOPIC="+topic, "ONCE_WORKER_LEDGER="+ledger.Table())}
			ready := func() int {
				q, err := ch.QueueDeclarePassive(topic, true, false, false, false, nil)
				require.NoError(t, err)
				return q.Messages
			}
			effects := func() map[string]int {
				out := map[string]int{}
				for k, n := range ledger.Counts(t) {
					if !strings.HasPrefix(k, "kill:") && !strings.HasPrefix(k, "settled:") {
						out[k] = n
					}
				}
				return out
			}
			// settled counts the deliveries a router handled to the end
			// (its ack about to be sent).
			settled := func() int {
				n := 0
				for k, c := range ledger.Counts(t) {
					if strings.HasPrefix(k, "settled:") {
						n += c
					}
				}
				return n
			}
			var total adaptertest.Stats
			for round := 0; ; round++ {
				require.Less(t, round, 10, "the queue never drained")
				// Done when every message waiting at the start of the round
				// has been handled and none is waiting.
				base, waiting := settled(), ready()
				stats := fleet.Run(t, func() bool { return settled()-base >= waiting && ready() == 0 }, 60*time.Second)
				total.Started += stats.Started
				total.Died += stats.Died
				require.Eventually(t, func() bool {
					q, err := ch.QueueDeclarePassive(topic, true, false, false, false, nil)
					return err == nil && q.Consumers == 0
				}, 10*time.Second, 10*time.Millisecond)
				if ready() == 0 {
					break
				}
			}
			t.Logf("%s: %+v", kind, total)
			require.Positive(t, total.Died, "routers killed themselves mid-message")
			counts := effects()
			require.Len(t, counts, orders)
			for key, n := range counts {
				require.Equal(t, 1, n, "effects of %s", key)
			}
		})
	}
}

// killPoint is where a router dies for an order, once.
func killPoint(key string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return [...]string{"", "in handler", "before ack"}[h.Sum32()%3]
}

func runWorker() error {
	ctx := context.Background()
	pool, err := adaptertest.OpenPool(ctx)
	if err != nil {
		return err
	}
	store, _, err := adaptertest.StoreSpecFromEnv().Open(ctx, pool)
	if err != nil {
		return err
	}
	ledger := adaptertest.OpenLedger(pool, os.Getenv("ONCE_WORKER_LEDGER"))
	scope := once.New(store, once.WithLease(500*time.Millisecond)).Scope("billing")
	pid := os.Getpid()
	// dieOnce kills the process the first time an order reaches point.
	dieOnce := func(ctx context.Context, key, point string) error {
		if killPoint(key) != point {
			return nil
		}
		killed, err := ledger.Has(ctx, "kill:"+key)
		if err != nil || killed {
			return err
		}
		if err := ledger.Record(ctx, "kill:"+key, pid); err != nil {
			return err
		}
		adaptertest.KillSelf()
		return nil
	}
	logger := watermill.NopLogger{}
	cfg := wamqp.NewDurableQueueConfig(amqpURL())
	cfg.Consume.Qos.PrefetchCount = 1 // one message in flight per router
	sub, err := wamqp.NewSubscriber(cfg, logger)
	if err != nil {
		return err
	}
	router, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		return err
	}
	beforeAck := func(next message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			out, err := next(msg)
			if err == nil {
				if kerr := dieOnce(msg.Context(), msg.UUID, "before ack"); kerr != nil {
					return nil, kerr
				}
				if kerr := ledger.Record(msg.Context(), "settled:"+msg.UUID, pid); kerr != nil {
					return nil, kerr
				}
			}
			return out, err
		}
	}
	router.AddMiddleware(beforeAck, oncewatermill.Middleware(scope, &oncewatermill.Config{MaxRetryDelay: 100 * time.Millisecond}))
	router.AddConsumerHandler("billing", os.Getenv("ONCE_WORKER_TOPIC"), sub, func(msg *message.Message) error {
		if err := dieOnce(msg.Context(), msg.UUID, "in handler"); err != nil {
			return err
		}
		return ledger.Record(msg.Context(), msg.UUID, pid)
	})
	return router.Run(ctx)
}
