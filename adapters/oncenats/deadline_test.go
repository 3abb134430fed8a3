package oncenats_test

import (
	"context"
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

// A per-message timeout on Process's context (context.WithTimeout around
// each call) made a handler that always outlives it a shutdown on every
// delivery: the core answers consume.ReasonCanceled for any ended context,
// and oncenats Nak-ed it after RetryBackoff, never more, and never
// terminated it, whatever MaxDeliveries: redelivered once a second
// forever. A context past its deadline is no shutdown: the failure is
// backed off by the delivery count and terminated on the MaxDeliveries-th
// delivery, as a handler error is.
func TestDeadlineOnProcessContextIsAHandlerFailure(t *testing.T) {
	e := newEnv(t, time.Minute)
	scope := once.New(memory.New(nil)).Scope("billing")
	e.publish(t, "slow", map[string]string{nats.MsgIdHdr: "slow-1"})
	cfg := &oncenats.Config{RetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: time.Second, MaxDeliveries: 3}
	outlives := func(ctx context.Context, _ jetstream.Msg) error {
		<-ctx.Done()
		return ctx.Err()
	}
	process := func(msg jetstream.Msg) consume.Decision {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		d, err := oncenats.Process(ctx, scope, msg, outlives, cfg)
		require.NoError(t, err)
		return d
	}
	for i, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
		msg := e.next(t)
		require.EqualValues(t, i+1, numDelivered(t, msg))
		d := process(msg)
		require.Equal(t, consume.RetryLater, d.Action, "delivery %d: %v", i+1, d)
		require.Equal(t, consume.ReasonCanceled, d.Reason)
		require.ErrorIs(t, d.Err, context.DeadlineExceeded)
		require.Equal(t, want, d.RetryAfter, "delivery %d: backed off by the count", i+1)
	}
	d := process(e.next(t))
	require.Equal(t, consume.DeadLetter, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonExhausted, d.Reason)
	require.ErrorIs(t, d.Err, context.DeadlineExceeded)
	e.settled(t)
}
