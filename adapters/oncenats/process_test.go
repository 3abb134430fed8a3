package oncenats_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncenats"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/internal/testservers"
)

// TestProcessSettlesAsTheTableSays runs each row of consume.Do's table
// through a real JetStream consumer on every store and checks what the
// broker did with the message.
func TestProcessSettlesAsTheTableSays(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			processTable(t, newStore)
		})
	}
}

func orderCfg() *oncenats.Config { return &oncenats.Config{Key: oncenats.HeaderKey("Order-Id")} }

func processTable(t *testing.T, newStore func(testing.TB) backends.Store) {
	ctx := context.Background()
	counting := func(runs *atomic.Int32, err error) oncenats.Handler {
		return func(context.Context, jetstream.Msg) error { runs.Add(1); return err }
	}

	t.Run("AckThenReplayDuplicate", func(t *testing.T) {
		e, scope := newEnv(t, time.Minute), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1", nats.MsgIdHdr: "a"})
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1", nats.MsgIdHdr: "b"})
		d, err := oncenats.Process(ctx, scope, e.next(t), counting(&runs, nil), orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, d.Reason)
		d, err = oncenats.Process(ctx, scope, e.next(t), counting(&runs, nil), orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.ReasonReplayed, d.Reason)
		e.settled(t)
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("MsgIDKeyByDefault", func(t *testing.T) {
		e, scope := newEnv(t, time.Minute), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "charge 5", map[string]string{nats.MsgIdHdr: "m-1"})
		d, err := oncenats.Process(ctx, scope, e.next(t), counting(&runs, nil), nil)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, d.Reason)
		_, err = once.Do(ctx, scope, e.stream+".m-1", nil, func(context.Context) (struct{}, error) {
			runs.Add(1)
			return struct{}{}, nil
		})
		require.NoError(t, err)
		require.Equal(t, int32(1), runs.Load(), "the key is the stream and the Nats-Msg-Id header")
		e.settled(t)
	})
	t.Run("RetryableErrorIsNakedAndRedelivered", func(t *testing.T) {
		e, scope := newEnv(t, time.Minute), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1"})
		first := e.next(t)
		d, err := oncenats.Process(ctx, scope, first, counting(&runs, errors.New("provider 503")), orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.RetryLater, d.Action)
		again := e.next(t)
		require.Equal(t, uint64(2), numDelivered(t, again), "a Nak redelivers at once")
		d, err = oncenats.Process(ctx, scope, again, counting(&runs, nil), orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, d.Reason)
		e.settled(t)
		require.Equal(t, int32(2), runs.Load())
	})
	t.Run("PanicIsNakedAndRedelivered", func(t *testing.T) {
		e, scope := newEnv(t, time.Minute), once.New(newStore(t)).Scope("billing")
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1"})
		d, err := oncenats.Process(ctx, scope, e.next(t), func(context.Context, jetstream.Msg) error { panic("bug") }, orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.ReasonHandlerError, d.Reason)
		var runs atomic.Int32
		d, err = oncenats.Process(ctx, scope, e.next(t), counting(&runs, nil), orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, d.Reason)
		e.settled(t)
	})
	t.Run("FinalErrorIsAckedAndReplayed", func(t *testing.T) {
		e, scope := newEnv(t, time.Minute), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1", nats.MsgIdHdr: "a"})
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1", nats.MsgIdHdr: "b"})
		d, err := oncenats.Process(ctx, scope, e.next(t), counting(&runs, once.Final(errors.New("card declined"))), orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, d.Reason)
		d, err = oncenats.Process(ctx, scope, e.next(t), counting(&runs, nil), orderCfg())
		require.NoError(t, err)
		require.Equal(t, consume.ReasonReplayed, d.Reason)
		require.EqualError(t, d.Err, "card declined")
		e.settled(t)
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("InProgressIsNakedWithDelay", func(t *testing.T) {
		// The Nak waits the owner's lease left: a short lease keeps the test short.
		e, scope := newEnv(t, time.Minute), once.New(newStore(t), once.WithLease(time.Second)).Scope("billing")
		started, release := make(chan struct{}), make(chan struct{})
		owner := make(chan consume.Decision, 1)
		go func() {
			owner <- consume.Do(ctx, scope, "o1", nil, func(context.Context) error { close(started); <-release; return nil })
		}()
		<-started
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1"})
		cfg := orderCfg()
		cfg.Fingerprint = func(jetstream.Msg) once.Fingerprint { return nil }
		var runs atomic.Int32
		d, err := oncenats.Process(ctx, scope, e.next(t), counting(&runs, nil), cfg)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonInProgress, d.Reason)
		require.Positive(t, d.RetryAfter)
		close(release)
		require.Equal(t, consume.ReasonDone, (<-owner).Reason)
		again := e.next(t)
		require.Equal(t, uint64(2), numDelivered(t, again))
		d, err = oncenats.Process(ctx, scope, again, counting(&runs, nil), cfg)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonReplayed, d.Reason)
		e.settled(t)
		require.Zero(t, runs.Load())
	})
	t.Run("BadMessagesAreTerminated", func(t *testing.T) {
		e, scope := newEnv(t, time.Minute), once.New(newStore(t)).Scope("billing")
		advisories, err := e.nc.SubscribeSync("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + e.stream + ".workers")
		require.NoError(t, err)
		require.NoError(t, e.nc.Flush())
		var runs atomic.Int32
		e.publish(t, "no key", nil)
		e.publish(t, "long key", map[string]string{"Order-Id": strings.Repeat("k", 256)})
		e.publish(t, "charge 5", map[string]string{"Order-Id": "o1"})
		e.publish(t, "charge 6", map[string]string{"Order-Id": "o1"})
		e.publish(t, "not json", map[string]string{"Order-Id": "o2"})
		want := []consume.Reason{consume.ReasonInvalidKey, consume.ReasonInvalidKey, consume.ReasonDone, consume.ReasonKeyReused, consume.ReasonRejected}
		for i, reason := range want {
			h := counting(&runs, nil)
			if i == 4 {
				h = counting(&runs, consume.Reject(errors.New("payload is not JSON")))
			}
			d, err := oncenats.Process(ctx, scope, e.next(t), h, orderCfg())
			require.NoError(t, err)
			require.Equal(t, reason, d.Reason)
		}
		terminated := map[uint64]bool{}
		for range 4 {
			m, err := advisories.NextMsg(10 * time.Second)
			require.NoError(t, err)
			var adv struct {
				StreamSeq uint64 `json:"stream_seq"`
			}
			require.NoError(t, json.Unmarshal(m.Data, &adv))
			terminated[adv.StreamSeq] = true
		}
		require.Equal(t, map[uint64]bool{1: true, 2: true, 4: true, 5: true}, terminated, "JetStream reports each termination")
		e.settled(t)
		require.Equal(t, int32(2), runs.Load())
	})
	t.Run("HandlerFuncInConsume", func(t *testing.T) {
		e, scope := newEnv(t, time.Minute), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		decisions := make(chan consume.Decision, 10)
		cfg := orderCfg()
		cfg.OnDecision = func(_ jetstream.Msg, d consume.Decision, ackErr error) {
			require.NoError(t, ackErr)
			decisions <- d
		}
		cc, err := e.cons.Consume(oncenats.HandlerFunc(ctx, scope, counting(&runs, nil), cfg))
		require.NoError(t, err)
		defer cc.Stop()
		for range 3 {
			e.publish(t, "charge 5", map[string]string{"Order-Id": "o1"})
		}
		reasons := map[consume.Reason]int{}
		for range 3 {
			reasons[(<-decisions).Reason]++
		}
		require.Equal(t, map[consume.Reason]int{consume.ReasonDone: 1, consume.ReasonReplayed: 2}, reasons)
		e.settled(t)
		require.Equal(t, int32(1), runs.Load())
	})
}

func TestNilInputsNeverPanic(t *testing.T) {
	scope := once.New(nil).Scope("billing")
	d, err := oncenats.Process(context.Background(), scope, nil, nil, nil)
	require.Error(t, err)
	require.Equal(t, consume.ReasonMisconfigured, d.Reason)
}
