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
	"github.com/stagedoor/once/consume"
)

// TestHeartbeatHoldsOffRedelivery runs a handler three times slower than
// the consumer's AckWait: without a heartbeat JetStream redelivers the
// message meanwhile; with one it does not.
func TestHeartbeatHoldsOffRedelivery(t *testing.T) {
	for _, heartbeat := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run("heartbeat="+heartbeat.String(), func(t *testing.T) {
			e := newEnv(t, 800*time.Millisecond)
			scope := once.New(nil).Scope("billing")
			e.publish(t, "charge 5", map[string]string{nats.MsgIdHdr: "m1"})
			msg := e.next(t)
			done := make(chan consume.Decision, 1)
			release := make(chan struct{})
			go func() {
				d, _ := oncenats.Process(context.Background(), scope, msg, func(context.Context, jetstream.Msg) error {
					<-release
					return nil
				}, &oncenats.Config{Heartbeat: heartbeat})
				done <- d
			}()
			again, err := e.cons.Next(jetstream.FetchMaxWait(2400 * time.Millisecond))
			close(release)
			require.Equal(t, consume.ReasonDone, (<-done).Reason)
			if heartbeat == 0 {
				require.NoError(t, err, "redelivered after AckWait")
				require.Equal(t, uint64(2), numDelivered(t, again))
				d, err := oncenats.Process(context.Background(), scope, again, func(context.Context, jetstream.Msg) error { return nil }, nil)
				require.NoError(t, err)
				require.Equal(t, consume.ReasonReplayed, d.Reason)
				return
			}
			require.True(t, errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded), "no redelivery while the handler beats: %v", err)
			e.settled(t)
		})
	}
}
