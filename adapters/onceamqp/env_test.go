package onceamqp_test

import (
	"context"
	"os"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/internal/testservers"
)

// amqpURL is ONCE_AMQP_URL or the local server.
func amqpURL() string {
	if u := os.Getenv("ONCE_AMQP_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// env is one queue with a dead-letter queue of its own, both deleted when
// the test ends.
type env struct {
	conn  *amqp.Connection
	ch    *amqp.Channel
	queue string
	dlq   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		if testservers.Required() {
			t.Fatalf("RabbitMQ is not usable: %v", err)
		}
		t.Skipf("RabbitMQ is not usable: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	e := &env{conn: conn, ch: ch, queue: "once-" + testservers.Suffix()}
	e.dlq = e.queue + ".dlq"
	_, err = ch.QueueDeclare(e.dlq, false, false, false, false, nil)
	require.NoError(t, err)
	_, err = ch.QueueDeclare(e.queue, false, false, false, false, amqp.Table{
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": e.dlq,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := conn.Channel()
		if err != nil {
			return
		}
		_, _ = c.QueueDelete(e.queue, false, false, false)
		_, _ = c.QueueDelete(e.dlq, false, false, false)
	})
	return e
}

// publish sends body with a message ID (none when empty) and headers.
func (e *env) publish(t *testing.T, body, messageID string, headers amqp.Table) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.ch.PublishWithContext(ctx, "", e.queue, false, false, amqp.Publishing{
		Body: []byte(body), MessageId: messageID, Headers: headers,
	}))
}

// next returns the next delivery of queue, without auto-ack.
func (e *env) next(t *testing.T, queue string) *amqp.Delivery {
	t.Helper()
	var d amqp.Delivery
	require.Eventually(t, func() bool {
		got, ok, err := e.ch.Get(queue, false)
		require.NoError(t, err)
		d = got
		return ok
	}, 10*time.Second, 5*time.Millisecond)
	return &d
}

// counts returns the messages left in the queue and in its dead-letter
// queue. It first closes the channel, so that every delivery not
// acknowledged returns to its queue and is counted.
func (e *env) counts(t *testing.T) (ready, dead int) {
	t.Helper()
	require.NoError(t, e.ch.Close())
	ch, err := e.conn.Channel()
	require.NoError(t, err)
	e.ch = ch
	require.Eventually(t, func() bool {
		q, err := ch.QueueDeclarePassive(e.queue, false, false, false, false, amqp.Table{
			"x-dead-letter-exchange": "", "x-dead-letter-routing-key": e.dlq,
		})
		return err == nil && q.Consumers == 0
	}, 5*time.Second, 5*time.Millisecond)
	q, err := ch.QueueDeclarePassive(e.queue, false, false, false, false, amqp.Table{
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": e.dlq,
	})
	require.NoError(t, err)
	dq, err := ch.QueueDeclarePassive(e.dlq, false, false, false, false, nil)
	require.NoError(t, err)
	return q.Messages, dq.Messages
}
