package oncenats_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncenats"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// A handler that panics on every delivery is Nak-ed with a delay that
// doubles with JetStream's delivery count, up to the cap, and is terminated
// on its MaxDeliveries-th delivery: a poison message is neither redelivered
// at broker speed nor forever.
func TestPoisonMessageBackedOffThenTerminated(t *testing.T) {
	e := newEnv(t, time.Minute)
	scope := once.New(memory.New(nil)).Scope("billing")
	e.publish(t, "boom", map[string]string{nats.MsgIdHdr: "poison-1"})
	cfg := &oncenats.Config{RetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 40 * time.Millisecond, MaxDeliveries: 5}
	panics := func(context.Context, jetstream.Msg) error { panic("cannot parse") }

	wantDelay := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond}
	for i, want := range wantDelay {
		msg := e.next(t)
		require.EqualValues(t, i+1, numDelivered(t, msg))
		d, err := oncenats.Process(context.Background(), scope, msg, panics, cfg)
		require.NoError(t, err)
		require.Equal(t, consume.RetryLater, d.Action)
		require.Equal(t, consume.ReasonHandlerError, d.Reason)
		require.Equal(t, want, d.RetryAfter, "delivery %d", i+1)
	}
	msg := e.next(t)
	require.EqualValues(t, 5, numDelivered(t, msg))
	d, err := oncenats.Process(context.Background(), scope, msg, panics, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.DeadLetter, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonExhausted, d.Reason)
	var p *once.PanicError
	require.ErrorAs(t, d.Err, &p, "the last failure is kept")

	msgs, err := e.cons.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
	require.NoError(t, err)
	extra := 0
	for range msgs.Messages() {
		extra++
	}
	require.Zero(t, extra, "a terminated message is not delivered again")
	e.settled(t)
}

var errBoom = errors.New("payment service refused")

// A handler error backs off too; a failure that is not the handler's (a
// misconfiguration, an in-progress key) is never terminated by the limit.
func TestPoisonLimitOnlyTerminatesHandlerFailures(t *testing.T) {
	e := newEnv(t, time.Minute)
	e.publish(t, "boom", map[string]string{nats.MsgIdHdr: "poison-2"})
	cfg := &oncenats.Config{RetryBackoff: time.Millisecond, MaxDeliveries: 1}
	misconfigured := once.Scope{} // the zero Scope: ReasonMisconfigured
	for range 3 {
		d, err := oncenats.Process(context.Background(), misconfigured, e.next(t), func(context.Context, jetstream.Msg) error { return nil }, cfg)
		require.NoError(t, err)
		require.Equal(t, consume.ReasonMisconfigured, d.Reason, "decision %v", d)
		require.Positive(t, d.RetryAfter)
	}
	scope := once.New(memory.New(nil)).Scope("billing")
	d, err := oncenats.Process(context.Background(), scope, e.next(t), func(context.Context, jetstream.Msg) error { return errBoom }, cfg)
	require.NoError(t, err)
	require.Equal(t, consume.ReasonExhausted, d.Reason, "decision %v", d)
	require.ErrorIs(t, d.Err, errBoom)
	e.settled(t)
}
