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

var errBoom = errors.New("payment service refused")

// quorumQueue declares a quorum queue that dead-letters into the env's
// dead-letter queue, and deletes it at the end of the test.
func quorumQueue(t *testing.T, e *env) string {
	t.Helper()
	q := e.queue + ".quorum"
	_, err := e.ch.QueueDeclare(q, true, false, false, false, amqp.Table{
		"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": e.dlq,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if c, err := e.conn.Channel(); err == nil {
			_, _ = c.QueueDelete(q, false, false, false)
		}
	})
	return q
}

// On a quorum queue a handler that panics on every delivery is requeued
// after a wait that doubles with x-delivery-count, up to MaxRequeueDelay,
// and is dead-lettered on its MaxDeliveries-th delivery: a poison message
// is neither requeued at broker speed nor forever.
func TestPoisonDeliveryBackedOffThenDeadLettered(t *testing.T) {
	e := newEnv(t)
	q := quorumQueue(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.ch.PublishWithContext(ctx, "", q, false, false, amqp.Publishing{Body: []byte("boom"), MessageId: "poison-1"}))
	scope := once.New(memory.New(nil)).Scope("billing")
	cfg := &onceamqp.Config{RequeueBackoff: 5 * time.Millisecond, MaxRequeueDelay: 20 * time.Millisecond, MaxDeliveries: 5}
	panics := func(context.Context, *amqp.Delivery) error { panic("cannot parse") }

	wantWait := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}
	for i, want := range wantWait {
		d := e.next(t, q)
		require.EqualValues(t, i+1, onceamqp.Deliveries(d), "headers %v", d.Headers)
		dec, err := onceamqp.Process(context.Background(), scope, d, panics, cfg)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonHandlerError, dec.Reason)
		require.Equal(t, want, dec.RetryAfter, "delivery %d", i+1)
	}
	d := e.next(t, q)
	require.EqualValues(t, 5, onceamqp.Deliveries(d))
	dec, err := onceamqp.Process(context.Background(), scope, d, panics, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.DeadLetter, dec.Action, "decision %v", dec)
	require.Equal(t, consume.ReasonExhausted, dec.Reason)
	var p *once.PanicError
	require.ErrorAs(t, dec.Err, &p, "the last failure is kept")

	dead := e.next(t, e.dlq)
	require.Equal(t, "poison-1", dead.MessageId)
	require.NoError(t, dead.Ack(false))
	got, ok, err := e.ch.Get(q, false)
	require.NoError(t, err)
	require.False(t, ok, "a dead-lettered delivery is not requeued: %v", got.MessageId)
}

// On a classic queue (no delivery count) a failing handler still backs
// off: a redelivery waits twice the first wait. A failure that is not the
// handler's is never dead-lettered by the limit.
func TestPoisonOnClassicQueue(t *testing.T) {
	e := newEnv(t)
	e.publish(t, "boom", "poison-2", nil)
	scope := once.New(memory.New(nil)).Scope("billing")
	cfg := &onceamqp.Config{RequeueBackoff: 5 * time.Millisecond, MaxDeliveries: 1}

	dec, err := onceamqp.Process(context.Background(), once.Scope{}, e.next(t, e.queue), func(context.Context, *amqp.Delivery) error { return nil }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonMisconfigured, dec.Reason, "decision %v", dec)
	require.Equal(t, 5*time.Millisecond, dec.RetryAfter)

	d := e.next(t, e.queue)
	require.True(t, d.Redelivered)
	require.EqualValues(t, 2, onceamqp.Deliveries(d))
	dec, err = onceamqp.Process(context.Background(), scope, d, func(context.Context, *amqp.Delivery) error { return errBoom }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonExhausted, dec.Reason, "decision %v", dec)
	require.ErrorIs(t, dec.Err, errBoom)
	ready, dead := e.counts(t)
	require.Zero(t, ready)
	require.Equal(t, 1, dead)
}

func TestDeliveriesReadsTheCountHeader(t *testing.T) {
	require.EqualValues(t, 1, onceamqp.Deliveries(&amqp.Delivery{}))
	require.EqualValues(t, 2, onceamqp.Deliveries(&amqp.Delivery{Redelivered: true}))
	for _, v := range []any{int64(3), int32(3), int16(3), int8(3), uint8(3), uint16(3), uint32(3), 3} {
		require.EqualValues(t, 4, onceamqp.Deliveries(&amqp.Delivery{Redelivered: true, Headers: amqp.Table{"x-delivery-count": v}}), "%T", v)
	}
	require.EqualValues(t, 2, onceamqp.Deliveries(&amqp.Delivery{Redelivered: true, Headers: amqp.Table{"x-delivery-count": "three"}}))
	require.EqualValues(t, 2, onceamqp.Deliveries(&amqp.Delivery{Redelivered: true, Headers: amqp.Table{"x-delivery-count": int64(-1)}}))
}
