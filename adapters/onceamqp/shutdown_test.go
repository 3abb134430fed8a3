package onceamqp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/onceamqp"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// A consumer whose context has ended (a rolling deploy) but whose channel
// still receives got each requeued delivery straight back: Process
// requeued at once, 869 deliveries a second on the local RabbitMQ, each
// one counted by the quorum queue toward its x-delivery-limit (RabbitMQ 4
// drops or dead-letters the message past 20). Now each requeue after the
// end of the context waits RequeueBackoff first, whatever the delivery
// count, and says so in the decision; the broker's count grows by one per
// requeue.
func TestShutdownRequeueWaitsRequeueBackoff(t *testing.T) {
	e := newEnv(t)
	q := quorumQueue(t, e)
	require.NoError(t, e.ch.PublishWithContext(context.Background(), "", q, false, false, amqp.Publishing{Body: []byte("charge"), MessageId: "order-s"}))
	require.NoError(t, e.ch.Qos(1, 0, false))
	deliveries, err := e.ch.Consume(q, "", false, false, false, false, nil)
	require.NoError(t, err)
	scope := once.New(memory.New(nil)).Scope("billing")
	const backoff = 50 * time.Millisecond
	cfg := &onceamqp.Config{RequeueBackoff: backoff}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // SIGTERM: the consumer's context has ended, its channel still receives
	runs := 0
	h := func(context.Context, *amqp.Delivery) error { runs++; return nil }
	for i := range 4 {
		var d amqp.Delivery
		select {
		case d = <-deliveries:
		case <-time.After(10 * time.Second):
			t.Fatalf("no delivery %d", i+1)
		}
		require.EqualValues(t, i+1, onceamqp.Deliveries(&d), "one requeue per Process")
		start := time.Now()
		dec, err := onceamqp.Process(ctx, scope, &d, h, cfg)
		require.GreaterOrEqual(t, time.Since(start), backoff, "delivery %d: waited before the requeue", i+1)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, consume.ReasonCanceled, dec.Reason, "delivery %d", i+1)
		require.Equal(t, backoff, dec.RetryAfter, "delivery %d: the first delivery's backoff, not the count's", i+1)
	}
	require.Zero(t, runs)
}

// The wait of a shutdown is bounded by MaxShutdownWait, however long the
// configured backoff, and a long wait that the end of the context
// interrupts goes on for at most RequeueBackoff more, so that shutdown is
// not held up.
func TestShutdownWaitIsBounded(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("billing")
	t.Run("CanceledBeforeProcess", func(t *testing.T) {
		ack := &fakeAck{}
		d := &amqp.Delivery{Acknowledger: ack, MessageId: "m-1", Body: []byte("x")}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		dec, err := onceamqp.Process(ctx, scope, d, func(context.Context, *amqp.Delivery) error { return nil },
			&onceamqp.Config{RequeueBackoff: time.Hour, MaxRequeueDelay: time.Hour})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, consume.ReasonCanceled, dec.Reason)
		require.Equal(t, onceamqp.MaxShutdownWait, dec.RetryAfter)
		require.Equal(t, 1, ack.nacks)
		require.True(t, ack.requeue)
	})
	t.Run("CanceledDuringTheWait", func(t *testing.T) {
		ack := &fakeAck{}
		d := &amqp.Delivery{Acknowledger: ack, MessageId: "m-2", Body: []byte("x"), Headers: amqp.Table{"x-delivery-count": int64(30)}}
		ctx, cancel := context.WithCancel(context.Background())
		const backoff = 20 * time.Millisecond
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		start := time.Now()
		dec, err := onceamqp.Process(ctx, scope, d, func(context.Context, *amqp.Delivery) error { return errors.New("transient") },
			&onceamqp.Config{RequeueBackoff: backoff, MaxRequeueDelay: time.Hour})
		elapsed := time.Since(start)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, consume.ReasonHandlerError, dec.Reason)
		require.GreaterOrEqual(t, elapsed, 50*time.Millisecond+backoff, "waited RequeueBackoff on after the end of ctx")
		require.Greater(t, dec.RetryAfter, backoff)
		require.Less(t, dec.RetryAfter, time.Hour, "not the planned hour")
		require.GreaterOrEqual(t, elapsed, dec.RetryAfter)
		require.Equal(t, 1, ack.nacks)
		require.True(t, ack.requeue)
	})
}

// A per-message timeout on Process's context (context.WithTimeout around
// each call) made a handler that always outlives it a shutdown on every
// delivery: the core answers consume.ReasonCanceled for any ended context,
// so the delivery was requeued at once, never backed off and never
// dead-lettered, whatever MaxDeliveries. A context past its deadline is no
// shutdown: the requeue waits the delivery count's backoff, all of it,
// and the MaxDeliveries-th delivery is dead-lettered as a handler error
// is.
func TestDeadlineOnProcessContextIsAHandlerFailure(t *testing.T) {
	e := newEnv(t)
	q := quorumQueue(t, e)
	require.NoError(t, e.ch.PublishWithContext(context.Background(), "", q, false, false, amqp.Publishing{Body: []byte("slow"), MessageId: "slow-1"}))
	scope := once.New(memory.New(nil)).Scope("billing")
	cfg := &onceamqp.Config{RequeueBackoff: 10 * time.Millisecond, MaxRequeueDelay: time.Second, MaxDeliveries: 3}
	outlives := func(ctx context.Context, _ *amqp.Delivery) error {
		<-ctx.Done()
		return ctx.Err()
	}
	process := func(d *amqp.Delivery) (consume.Decision, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		start := time.Now()
		dec, err := onceamqp.Process(ctx, scope, d, outlives, cfg)
		require.NoError(t, err)
		return dec, time.Since(start)
	}
	for i, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
		d := e.next(t, q)
		require.EqualValues(t, i+1, onceamqp.Deliveries(d))
		dec, took := process(d)
		require.Equal(t, consume.RetryLater, dec.Action, "delivery %d: %v", i+1, dec)
		require.Equal(t, consume.ReasonCanceled, dec.Reason)
		require.ErrorIs(t, dec.Err, context.DeadlineExceeded)
		require.Equal(t, want, dec.RetryAfter, "delivery %d: backed off by the count", i+1)
		require.GreaterOrEqual(t, took, want, "delivery %d: the wait was applied", i+1)
	}
	dec, _ := process(e.next(t, q))
	require.Equal(t, consume.DeadLetter, dec.Action, "decision %v", dec)
	require.Equal(t, consume.ReasonExhausted, dec.Reason)
	require.ErrorIs(t, dec.Err, context.DeadlineExceeded)
	dead := e.next(t, e.dlq)
	require.Equal(t, "slow-1", dead.MessageId)
	require.NoError(t, dead.Ack(false))
}
