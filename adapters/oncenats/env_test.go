package oncenats_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/internal/testservers"
)

// natsURL is ONCE_NATS_URL or the local server.
func natsURL() string {
	if u := os.Getenv("ONCE_NATS_URL"); u != "" {
		return u
	}
	return "nats://127.0.0.1:4222"
}

// env is one JetStream stream with one durable pull consumer, both with
// unique names and deleted when the test ends.
type env struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  string
	subject string
	cons    jetstream.Consumer
}

func newEnv(t *testing.T, ackWait time.Duration) *env {
	t.Helper()
	nc, err := nats.Connect(natsURL(), nats.Timeout(5*time.Second))
	if err != nil {
		if testservers.Required() {
			t.Fatalf("NATS is not usable: %v", err)
		}
		t.Skipf("NATS is not usable: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e := &env{nc: nc, js: js, stream: "ONCE_" + testservers.Suffix()}
	e.subject = e.stream + ".orders"
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: e.stream, Subjects: []string{e.subject}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, e.stream)
	})
	e.cons, err = js.CreateOrUpdateConsumer(ctx, e.stream, jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 1000,
	})
	require.NoError(t, err)
	return e
}

// publish sends payload with the given headers and waits for the stream to
// store it.
func (e *env) publish(t *testing.T, payload string, headers map[string]string) {
	t.Helper()
	m := nats.NewMsg(e.subject)
	m.Data = []byte(payload)
	for k, v := range headers {
		m.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := e.js.PublishMsg(ctx, m)
	require.NoError(t, err)
}

// next returns the next delivery.
func (e *env) next(t *testing.T) jetstream.Msg {
	t.Helper()
	msg, err := e.cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	return msg
}

// settled waits until the consumer has delivered everything and holds no
// unacknowledged message.
func (e *env) settled(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := e.cons.Info(context.Background())
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, 10*time.Second, 10*time.Millisecond)
}

func numDelivered(t *testing.T, msg jetstream.Msg) uint64 {
	t.Helper()
	md, err := msg.Metadata()
	require.NoError(t, err)
	return md.NumDelivered
}
