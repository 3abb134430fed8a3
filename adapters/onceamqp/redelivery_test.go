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

// holdKey claims key in scope from another consumer and keeps the claim
// until the test ends.
func holdKey(t *testing.T, scope once.Scope, key string) {
	t.Helper()
	started, rel, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = once.Do(context.Background(), scope, key, nil, func(context.Context) (int, error) {
			close(started)
			<-rel
			return 0, nil
		})
	}()
	<-started
	t.Cleanup(func() { close(rel); <-done })
}

var noFingerprint = func(*amqp.Delivery) once.Fingerprint { return nil }

// A consumer shutting down (its context ends while the handler runs and
// the handler returns the context's error) requeues the delivery on its
// last allowed delivery instead of dead-lettering it as exhausted.
func TestShutdownOnTheLastDeliveryIsNotExhausted(t *testing.T) {
	e := newEnv(t)
	q := quorumQueue(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.ch.PublishWithContext(ctx, "", q, false, false, amqp.Publishing{Body: []byte("charge"), MessageId: "order-3"}))
	scope := once.New(memory.New(nil)).Scope("billing")
	cfg := &onceamqp.Config{MaxDeliveries: 2, RequeueBackoff: time.Millisecond}
	dec, err := onceamqp.Process(context.Background(), scope, e.next(t, q), func(context.Context, *amqp.Delivery) error { return errors.New("transient") }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonHandlerError, dec.Reason)
	d := e.next(t, q)
	require.EqualValues(t, 2, onceamqp.Deliveries(d))
	sctx, stop := context.WithCancel(context.Background())
	dec, err = onceamqp.Process(sctx, scope, d, func(ctx context.Context, _ *amqp.Delivery) error {
		stop() // SIGTERM while the handler runs
		<-ctx.Done()
		return ctx.Err()
	}, cfg)
	require.ErrorIs(t, err, context.Canceled, "the requeue's wait was cut short")
	require.Equal(t, consume.RetryLater, dec.Action, "decision %v", dec)
	require.Equal(t, consume.ReasonCanceled, dec.Reason)
	dec, err = onceamqp.Process(context.Background(), scope, e.next(t, q), func(context.Context, *amqp.Delivery) error { return nil }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonDone, dec.Reason)
}

// A delivery whose key another consumer runs waits the owner's lease left,
// up to MaxRequeueDelay, before its requeue: not the core's one-second
// hint, since every requeue counts toward a quorum queue's
// x-delivery-limit.
func TestInProgressWaitsTheOwnersLeaseUpToTheCap(t *testing.T) {
	e := newEnv(t)
	scope := once.New(memory.New(nil)).Scope("billing") // the default lease, 30 s
	holdKey(t, scope, "order-1")
	e.publish(t, "charge", "order-1", nil)
	cfg := &onceamqp.Config{Fingerprint: noFingerprint, MaxRequeueDelay: 1500 * time.Millisecond}
	dec, err := onceamqp.Process(context.Background(), scope, e.next(t, e.queue), func(context.Context, *amqp.Delivery) error { return nil }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonInProgress, dec.Reason)
	require.Equal(t, 1500*time.Millisecond, dec.RetryAfter)
}

// The decision reports the wait applied before the requeue, not the hint.
func TestRetryAfterIsTheWaitApplied(t *testing.T) {
	e := newEnv(t)
	scope := once.New(memory.New(nil)).Scope("billing")
	e.publish(t, "charge", "order-h", nil)
	cfg := &onceamqp.Config{MaxRequeueDelay: 20 * time.Millisecond}
	dec, err := onceamqp.Process(context.Background(), scope, e.next(t, e.queue), func(context.Context, *amqp.Delivery) error {
		return once.Hold(errors.New("provider timeout after send"))
	}, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonHeld, dec.Reason)
	require.Equal(t, 20*time.Millisecond, dec.RetryAfter, "the wait, not the 30s lease")
	dec, err = onceamqp.Process(context.Background(), scope, e.next(t, e.queue), func(context.Context, *amqp.Delivery) error { return nil }, &onceamqp.Config{MaxRequeueDelay: -1})
	require.NoError(t, err)
	require.Equal(t, consume.ReasonInProgress, dec.Reason)
	require.Zero(t, dec.RetryAfter, "requeued at once")
	require.Equal(t, "retry later (in progress)", dec.String())
}

// A handler that settles its delivery itself gets an error, and Process's
// own acknowledgement is the only one: the channel stays open, and so do
// its other deliveries.
func TestHandlerCannotSettleTheDelivery(t *testing.T) {
	e := newEnv(t)
	e.publish(t, "a", "m-a", nil)
	e.publish(t, "b", "m-b", nil)
	scope := once.New(memory.New(nil)).Scope("billing")
	other := e.next(t, e.queue) // m-a, still unacknowledged
	closed := e.ch.NotifyClose(make(chan *amqp.Error, 1))
	var ackErr, nackErr, rejectErr error
	dec, err := onceamqp.Process(context.Background(), scope, e.next(t, e.queue), func(_ context.Context, d *amqp.Delivery) error {
		ackErr, nackErr, rejectErr = d.Ack(false), d.Nack(false, true), d.Reject(false)
		return nil
	}, nil)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonDone, dec.Reason)
	for _, err := range []error{ackErr, nackErr, rejectErr} {
		require.ErrorIs(t, err, onceamqp.ErrSettledByProcess)
	}
	// A synchronous call after the acknowledgement fails if the broker
	// closed the channel for a doubled delivery tag.
	_, err = e.ch.QueueDeclarePassive(e.queue, false, false, false, false, amqp.Table{
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": e.dlq,
	})
	require.NoError(t, err)
	require.NoError(t, other.Ack(false))
	ready, dead := e.counts(t)
	require.Zero(t, ready, "both deliveries acknowledged once")
	require.Zero(t, dead)
	select {
	case cerr := <-closed:
		require.Nil(t, cerr, "closed by the test, not by the broker")
	default:
	}
}

// A panicking Config.Key or Config.Fingerprint is a bug of the service,
// not of the message: the delivery is requeued as
// consume.ReasonMisconfigured with the *onceamqp.ConfigPanicError, backed off,
// not dead-lettered (nor exhausted by MaxDeliveries), so that a bad deploy
// whose Key panics on every message does not dead-letter the queue; once
// the callback is fixed, the message is processed. A panicking OnDecision
// changes nothing.
func TestConfigFuncPanicsAreRecovered(t *testing.T) {
	e := newEnv(t)
	scope := once.New(memory.New(nil)).Scope("billing")
	var reported []consume.Reason
	var broken bool
	cfg := &onceamqp.Config{
		Key: func(d *amqp.Delivery) (string, error) {
			if broken && string(d.Body) == "bad key" {
				panic("index out of range")
			}
			return onceamqp.MessageIDKey(d)
		},
		Fingerprint: func(d *amqp.Delivery) once.Fingerprint {
			if broken && string(d.Body) == "bad fp" {
				panic("nil map")
			}
			return onceamqp.BodyFingerprint(d)
		},
		OnDecision: func(_ *amqp.Delivery, dec consume.Decision, _ error) {
			reported = append(reported, dec.Reason)
			panic("logger broke")
		},
		RequeueBackoff: time.Millisecond,
		MaxDeliveries:  1,
	}
	h := func(context.Context, *amqp.Delivery) error { return nil }
	for _, tc := range []struct{ body, id, fn string }{{"bad key", "a", "Key"}, {"bad fp", "b", "Fingerprint"}} {
		broken = true
		e.publish(t, tc.body, tc.id, nil)
		for i, wait := range []time.Duration{time.Millisecond, 2 * time.Millisecond} { // first delivery, redelivery
			dec, err := onceamqp.Process(context.Background(), scope, e.next(t, e.queue), h, cfg)
			require.NoError(t, err)
			require.Equal(t, consume.RetryLater, dec.Action, "%s, delivery %d: %v", tc.fn, i+1, dec)
			require.Equal(t, consume.ReasonMisconfigured, dec.Reason)
			require.Equal(t, wait, dec.RetryAfter, "backed off as RequeueBackoff says")
			var p *onceamqp.ConfigPanicError
			require.ErrorAs(t, dec.Err, &p)
			require.Equal(t, tc.fn, p.Func)
			require.NotEmpty(t, p.Stack)
		}
		broken = false // the fix is deployed
		dec, err := onceamqp.Process(context.Background(), scope, e.next(t, e.queue), h, cfg)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonDone, dec.Reason)
	}
	m := consume.ReasonMisconfigured
	require.Equal(t, []consume.Reason{m, m, consume.ReasonDone, m, m, consume.ReasonDone}, reported)
	ready, dead := e.counts(t)
	require.Zero(t, ready)
	require.Zero(t, dead)
}

// fakeAck records how a delivery was settled.
type fakeAck struct {
	acks, nacks int
	requeue     bool
}

func (f *fakeAck) Ack(uint64, bool) error { f.acks++; return nil }
func (f *fakeAck) Nack(_ uint64, _ bool, requeue bool) error {
	f.nacks++
	f.requeue = requeue
	return nil
}
func (f *fakeAck) Reject(uint64, bool) error { return nil }

// When Process's context has ended (a shutdown), the requeue waits
// RequeueBackoff (the first delivery's, whatever the count: it reported
// the 4 s backoff of a fifth delivery while it waited nothing), and the
// decision's RetryAfter says so.
func TestCanceledContextReportsTheWaitApplied(t *testing.T) {
	scope := once.New(memory.New(nil)).Scope("billing")
	ack := &fakeAck{}
	d := &amqp.Delivery{Acknowledger: ack, MessageId: "m-1", Body: []byte("x"), Headers: amqp.Table{"x-delivery-count": int64(4)}}
	ctx, cancel := context.WithCancel(context.Background())
	var reported consume.Decision
	start := time.Now()
	dec, err := onceamqp.Process(ctx, scope, d, func(ctx context.Context, _ *amqp.Delivery) error {
		cancel() // SIGTERM while the handler runs
		return ctx.Err()
	}, &onceamqp.Config{RequeueBackoff: 30 * time.Millisecond, OnDecision: func(_ *amqp.Delivery, dec consume.Decision, _ error) { reported = dec }})
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "waited before the requeue")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, consume.ReasonCanceled, dec.Reason)
	require.Equal(t, 30*time.Millisecond, dec.RetryAfter)
	require.Equal(t, 30*time.Millisecond, reported.RetryAfter, "OnDecision sees the wait applied too")
	require.Equal(t, 1, ack.nacks)
	require.True(t, ack.requeue)
}
