package onceamqp_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/onceamqp"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/internal/testservers"
)

// TestProcessSettlesAsTheTableSays runs each row of consume.Do's table
// through a real RabbitMQ queue with a dead-letter queue, on every store,
// and checks where each message went.
func TestProcessSettlesAsTheTableSays(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			processTable(t, newStore)
		})
	}
}

func processTable(t *testing.T, newStore func(testing.TB) backends.Store) {
	ctx := context.Background()
	counting := func(runs *atomic.Int32, err error) onceamqp.Handler {
		return func(context.Context, *amqp.Delivery) error { runs.Add(1); return err }
	}
	process := func(t *testing.T, e *env, scope once.Scope, h onceamqp.Handler, cfg *onceamqp.Config) consume.Decision {
		t.Helper()
		d, err := onceamqp.Process(ctx, scope, e.next(t, e.queue), h, cfg)
		require.NoError(t, err)
		return d
	}

	t.Run("AckThenReplayDuplicate", func(t *testing.T) {
		e, scope := newEnv(t), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "charge 5", "m1", nil)
		e.publish(t, "charge 5", "m1", nil)
		require.Equal(t, consume.ReasonDone, process(t, e, scope, counting(&runs, nil), nil).Reason)
		require.Equal(t, consume.ReasonReplayed, process(t, e, scope, counting(&runs, nil), nil).Reason)
		ready, dead := e.counts(t)
		require.Zero(t, ready+dead)
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("RetryableErrorIsRequeued", func(t *testing.T) {
		e, scope := newEnv(t), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "charge 5", "m1", nil)
		require.Equal(t, consume.ReasonHandlerError, process(t, e, scope, counting(&runs, errors.New("provider 503")), nil).Reason)
		again := e.next(t, e.queue)
		require.True(t, again.Redelivered)
		d, err := onceamqp.Process(ctx, scope, again, counting(&runs, nil), nil)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, d.Reason)
		require.Equal(t, int32(2), runs.Load())
	})
	t.Run("PanicIsRequeued", func(t *testing.T) {
		e, scope := newEnv(t), once.New(newStore(t)).Scope("billing")
		e.publish(t, "charge 5", "m1", nil)
		require.Equal(t, consume.ReasonHandlerError, process(t, e, scope, func(context.Context, *amqp.Delivery) error { panic("bug") }, nil).Reason)
		var runs atomic.Int32
		require.Equal(t, consume.ReasonDone, process(t, e, scope, counting(&runs, nil), nil).Reason)
		require.Equal(t, int32(1), runs.Load())
		ready, dead := e.counts(t)
		require.Zero(t, ready+dead)
	})
	t.Run("FinalErrorIsAckedAndReplayed", func(t *testing.T) {
		e, scope := newEnv(t), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "charge 5", "m1", nil)
		e.publish(t, "charge 5", "m1", nil)
		require.Equal(t, consume.ReasonDone, process(t, e, scope, counting(&runs, once.Final(errors.New("declined"))), nil).Reason)
		d := process(t, e, scope, counting(&runs, nil), nil)
		require.Equal(t, consume.ReasonReplayed, d.Reason)
		require.EqualError(t, d.Err, "declined")
		ready, dead := e.counts(t)
		require.Zero(t, ready+dead, "a replayed final error is acked, not redelivered forever")
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("InProgressIsRequeuedAfterTheHint", func(t *testing.T) {
		e, scope := newEnv(t), once.New(newStore(t)).Scope("billing")
		started, release := make(chan struct{}), make(chan struct{})
		owner := make(chan consume.Decision, 1)
		go func() {
			owner <- consume.Do(ctx, scope, "m1", nil, func(context.Context) error { close(started); <-release; return nil })
		}()
		<-started
		e.publish(t, "charge 5", "m1", nil)
		cfg := &onceamqp.Config{Fingerprint: func(*amqp.Delivery) once.Fingerprint { return nil }, MaxRequeueDelay: 50 * time.Millisecond}
		var runs atomic.Int32
		d := process(t, e, scope, counting(&runs, nil), cfg)
		require.Equal(t, consume.ReasonInProgress, d.Reason)
		close(release)
		require.Equal(t, consume.ReasonDone, (<-owner).Reason)
		again := e.next(t, e.queue)
		require.True(t, again.Redelivered)
		d, err := onceamqp.Process(ctx, scope, again, counting(&runs, nil), cfg)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonReplayed, d.Reason)
		require.Zero(t, runs.Load())
	})
	t.Run("BadMessagesAreDeadLettered", func(t *testing.T) {
		e, scope := newEnv(t), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		e.publish(t, "no key", "", nil)
		e.publish(t, "ctl key", "a\x01b", nil)
		e.publish(t, "charge 5", "m1", nil)
		e.publish(t, "charge 6", "m1", nil)
		e.publish(t, "not json", "m2", nil)
		want := []consume.Reason{consume.ReasonInvalidKey, consume.ReasonInvalidKey, consume.ReasonDone, consume.ReasonKeyReused, consume.ReasonRejected}
		for i, reason := range want {
			h := counting(&runs, nil)
			if i == 4 {
				h = counting(&runs, consume.Reject(errors.New("payload is not JSON")))
			}
			require.Equal(t, reason, process(t, e, scope, h, nil).Reason)
		}
		var bodies []string
		for range 4 {
			dl := e.next(t, e.dlq)
			bodies = append(bodies, string(dl.Body))
			require.NoError(t, dl.Ack(false))
		}
		require.Equal(t, []string{"no key", "ctl key", "charge 6", "not json"}, bodies)
		ready, dead := e.counts(t)
		require.Zero(t, ready+dead)
		require.Equal(t, int32(2), runs.Load())
	})
	t.Run("HeaderKey", func(t *testing.T) {
		e, scope := newEnv(t), once.New(newStore(t)).Scope("billing")
		var runs atomic.Int32
		cfg := &onceamqp.Config{Key: onceamqp.HeaderKey("order-id")}
		e.publish(t, "charge 5", "a", amqp.Table{"order-id": "o1"})
		e.publish(t, "charge 5", "b", amqp.Table{"order-id": "o1"})
		e.publish(t, "charge 5", "c", amqp.Table{"order-id": int32(7)})
		e.publish(t, "charge 5", "d", amqp.Table{"order-id": strings.Repeat("k", 256)})
		require.Equal(t, consume.ReasonDone, process(t, e, scope, counting(&runs, nil), cfg).Reason)
		require.Equal(t, consume.ReasonReplayed, process(t, e, scope, counting(&runs, nil), cfg).Reason)
		d := process(t, e, scope, counting(&runs, nil), cfg)
		require.Equal(t, consume.ReasonInvalidKey, d.Reason)
		require.ErrorIs(t, d.Err, onceamqp.ErrMissingKey)
		d = process(t, e, scope, counting(&runs, nil), cfg)
		require.Equal(t, consume.ReasonInvalidKey, d.Reason, "a key over 255 bytes is dead-lettered")
		require.ErrorAs(t, d.Err, new(*once.InvalidInputError))
		require.Eventually(t, func() bool { _, dead := e.counts(t); return dead == 2 }, 5*time.Second, 10*time.Millisecond)
		require.Equal(t, int32(1), runs.Load())
	})
}

func TestNilInputsNeverPanic(t *testing.T) {
	scope := once.New(nil).Scope("billing")
	d, err := onceamqp.Process(context.Background(), scope, nil, nil, nil)
	require.Error(t, err)
	require.Equal(t, consume.ReasonMisconfigured, d.Reason)
	d, err = onceamqp.Process(context.Background(), scope, &amqp.Delivery{MessageId: "m"}, nil, nil)
	require.Error(t, err, "a delivery without an acknowledger cannot be settled")
	require.Equal(t, consume.ReasonMisconfigured, d.Reason)
}
