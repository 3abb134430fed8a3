package onceamqp_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/internal/adaptertest"
	"github.com/stagedoor/once/adapters/onceamqp"
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

// TestKilledWorkersProduceOneEffectPerMessage publishes every order twice
// (two messages with one MessageId) to a queue consumed by two worker
// processes that die by SIGKILL mid-message — their own, at the worst
// points, and the test's, at random — and are restarted. RabbitMQ requeues
// a dead worker's deliveries at once. When the queue is empty with no
// worker left, the ledger holds exactly one effect per order.
//
// On PostgreSQL the effect is written in the transaction of the claim
// (ProcessTx), so a kill between the effect and the commit undoes both.
// On Redis the effect is committed on its own: the workers die before the
// effect and between the outcome's record and the acknowledgement, and
// the fleet does not kill at random (a kill between a non-transactional
// effect and its record repeats it after the lease, as documented).
func TestKilledWorkersProduceOneEffectPerMessage(t *testing.T) {
	for _, kind := range []string{"postgres", "redis"} {
		t.Run(kind, func(t *testing.T) {
			const orders = 12
			e := newEnv(t)
			spec := adaptertest.NewStoreSpec(t, kind)
			ledger := adaptertest.NewLedger(t)
			for i := range orders {
				for range 2 {
					e.publish(t, "charge order "+strconv.Itoa(i), "order-"+strconv.Itoa(i), nil)
				}
			}
			fleet := &adaptertest.Fleet{Workers: 2, Env: append(spec.Env(),
				"ONCE_WORKER_QUEUE="+e.queue, "ONCE_WORKER_LEDGER="+ledger.Table(), "ONCE_AMQP_URL="+amqpURL())}
			if kind == "postgres" {
				fleet.KillEvery = 600 * time.Millisecond
			}
			effects := func() map[string]int {
				out := map[string]int{}
				for k, n := range ledger.Counts(t) {
					if !strings.HasPrefix(k, "settled:") {
						out[k] = n
					}
				}
				return out
			}
			// settled counts the deliveries a worker handled to the end
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
				base, waiting := settled(), readyCount(t, e)
				stats := fleet.Run(t, func() bool { return settled()-base >= waiting && readyCount(t, e) == 0 }, 60*time.Second)
				total.Started += stats.Started
				total.Died += stats.Died
				total.Killed += stats.Killed
				if ready, dead := e.counts(t); ready+dead == 0 {
					break
				}
			}
			t.Logf("%s: %+v", kind, total)
			require.Positive(t, total.Died, "workers killed themselves mid-message")
			counts := effects()
			require.Len(t, counts, orders)
			for key, n := range counts {
				require.Equal(t, 1, n, "effects of %s", key)
			}
		})
	}
}

func readyCount(t *testing.T, e *env) int {
	q, err := e.ch.QueueDeclarePassive(e.queue, false, false, false, false, amqp.Table{
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": e.dlq,
	})
	require.NoError(t, err)
	return q.Messages
}

// killPoint is where a worker kills itself on the first delivery of a
// message, chosen from its key.
func killPoint(key string, redelivered bool) string {
	if redelivered {
		return ""
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return [...]string{"", "in handler", "before ack", ""}[h.Sum32()%4]
}

// killingAcker kills the process when the delivery is acknowledged, after
// the outcome is recorded and before the broker hears of it; otherwise it
// counts the delivery as settled, then acknowledges it.
type killingAcker struct {
	amqp.Acknowledger
	kill    bool
	settled func() error
}

func (a killingAcker) Ack(tag uint64, multiple bool) error {
	if a.kill {
		adaptertest.KillSelf()
	}
	if err := a.settled(); err != nil {
		return err
	}
	return a.Acknowledger.Ack(tag, multiple)
}

func runWorker() error {
	ctx := context.Background()
	pool, err := adaptertest.OpenPool(ctx)
	if err != nil {
		return err
	}
	store, pg, err := adaptertest.StoreSpecFromEnv().Open(ctx, pool)
	if err != nil {
		return err
	}
	ledger := adaptertest.OpenLedger(pool, os.Getenv("ONCE_WORKER_LEDGER"))
	scope := once.New(store, once.WithLease(500*time.Millisecond)).Scope("billing")
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		return err
	}
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(1, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.ConsumeWithContext(ctx, os.Getenv("ONCE_WORKER_QUEUE"), "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	cfg := &onceamqp.Config{Fingerprint: func(*amqp.Delivery) once.Fingerprint { return nil }, MaxRequeueDelay: 100 * time.Millisecond}
	pid := os.Getpid()
	for d := range deliveries {
		key := d.MessageId
		point := killPoint(key, d.Redelivered)
		d.Acknowledger = killingAcker{Acknowledger: d.Acknowledger, kill: point == "before ack",
			settled: func() error { return ledger.Record(ctx, "settled:"+key, pid) }}
		if pg != nil {
			_, _ = onceamqp.ProcessTx(ctx, scope, &d, pg.BeginTx, func(ctx context.Context, tx pgx.Tx, _ *amqp.Delivery) error {
				if err := ledger.RecordTx(ctx, tx, key, pid); err != nil {
					return err
				}
				if point == "in handler" {
					adaptertest.KillSelf() // after the effect, before the commit
				}
				return nil
			}, cfg)
			continue
		}
		_, _ = onceamqp.Process(ctx, scope, &d, func(ctx context.Context, _ *amqp.Delivery) error {
			if point == "in handler" {
				adaptertest.KillSelf() // claimed, before the effect
			}
			return ledger.Record(ctx, key, pid)
		}, cfg)
	}
	return fmt.Errorf("deliveries closed")
}
