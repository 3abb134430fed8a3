package oncenats_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/internal/adaptertest"
	"github.com/stagedoor/once/adapters/oncenats"
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
// (two messages, one Order-Id) to a stream consumed by two worker
// processes that die by SIGKILL mid-message — their own, at the worst
// points, and the test's, at random — and are restarted, until every
// message is acknowledged. The ledger then holds exactly one effect per
// order.
//
// On PostgreSQL the effect is written in the transaction of the claim
// (ProcessTx), so a kill between the effect and the commit undoes both.
// On Redis the effect is committed on its own, so a kill between the
// effect and the outcome's record would repeat it after the lease (the
// documented at-least-once window of a non-transactional effect); the
// workers die before the effect and between the record and the
// acknowledgement, and the fleet does not kill at random.
func TestKilledWorkersProduceOneEffectPerMessage(t *testing.T) {
	for _, kind := range []string{"postgres", "redis"} {
		t.Run(kind, func(t *testing.T) {
			const orders = 12
			e := newEnv(t, 700*time.Millisecond)
			spec := adaptertest.NewStoreSpec(t, kind)
			ledger := adaptertest.NewLedger(t)
			for i := range orders {
				for copyN := range 2 {
					e.publish(t, "charge order "+strconv.Itoa(i), map[string]string{
						"Order-Id": "order-" + strconv.Itoa(i), nats.MsgIdHdr: fmt.Sprintf("%d-%d", i, copyN),
					})
				}
			}
			fleet := &adaptertest.Fleet{Workers: 2, Env: append(spec.Env(),
				"ONCE_WORKER_STREAM="+e.stream, "ONCE_WORKER_LEDGER="+ledger.Table(), "ONCE_NATS_URL="+natsURL())}
			if kind == "postgres" {
				fleet.KillEvery = 600 * time.Millisecond
			}
			stats := fleet.Run(t, func() bool {
				info, err := e.cons.Info(context.Background())
				return err == nil && info.NumPending == 0 && info.NumAckPending == 0
			}, 60*time.Second)
			t.Logf("%s: %+v", kind, stats)
			require.Positive(t, stats.Died, "workers killed themselves mid-message")
			counts := ledger.Counts(t)
			require.Len(t, counts, orders)
			for key, n := range counts {
				require.Equal(t, 1, n, "effects of %s", key)
			}
		})
	}
}

// killPoint is where a worker kills itself on the first delivery of an
// order's message, chosen from the order's key.
func killPoint(key string, delivered uint64) string {
	if delivered > 1 {
		return ""
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return [...]string{"", "in handler", "before ack", ""}[h.Sum32()%4]
}

// killingMsg kills the process when the message is acknowledged, after the
// outcome is recorded and before the broker hears of it.
type killingMsg struct {
	jetstream.Msg
	kill bool
}

func (m killingMsg) Ack() error {
	if m.kill {
		adaptertest.KillSelf()
	}
	return m.Msg.Ack()
}

func runWorker() error {
	ctx := context.Background()
	pool, err := adaptertest.OpenPool(ctx)
	if err != nil {
		return err
	}
	spec := adaptertest.StoreSpecFromEnv()
	store, pg, err := spec.Open(ctx, pool)
	if err != nil {
		return err
	}
	ledger := adaptertest.OpenLedger(pool, os.Getenv("ONCE_WORKER_LEDGER"))
	scope := once.New(store, once.WithLease(500*time.Millisecond)).Scope("billing")
	nc, err := nats.Connect(natsURL())
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	cons, err := js.Consumer(ctx, os.Getenv("ONCE_WORKER_STREAM"), "workers")
	if err != nil {
		return err
	}
	cfg := &oncenats.Config{Key: oncenats.HeaderKey("Order-Id"), Fingerprint: func(jetstream.Msg) once.Fingerprint { return nil }}
	pid := os.Getpid()
	handle := func(msg jetstream.Msg) {
		key := msg.Headers().Get("Order-Id")
		md, err := msg.Metadata()
		if err != nil {
			return
		}
		point := killPoint(key, md.NumDelivered)
		wrapped := killingMsg{Msg: msg, kill: point == "before ack"}
		if pg != nil {
			_, _ = oncenats.ProcessTx(ctx, scope, wrapped, pg.BeginTx, func(ctx context.Context, tx pgx.Tx, _ jetstream.Msg) error {
				if err := ledger.RecordTx(ctx, tx, key, pid); err != nil {
					return err
				}
				if point == "in handler" {
					adaptertest.KillSelf() // after the effect, before the commit
				}
				return nil
			}, cfg)
			return
		}
		_, _ = oncenats.Process(ctx, scope, wrapped, func(ctx context.Context, _ jetstream.Msg) error {
			if point == "in handler" {
				adaptertest.KillSelf() // claimed, before the effect
			}
			return ledger.Record(ctx, key, pid)
		}, cfg)
	}
	if _, err := cons.Consume(handle, jetstream.PullMaxMessages(1)); err != nil {
		return err
	}
	select {}
}
