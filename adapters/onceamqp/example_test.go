package onceamqp_test

import (
	"context"
	"log"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/onceamqp"
)

// Consume a queue with manual acknowledgements: each delivery's handler
// runs once per MessageId, and the delivery is acked, requeued or
// dead-lettered (to the queue's x-dead-letter-exchange) as consume.Do
// decides.
func ExampleProcess() {
	ctx := context.Background()
	conn, err := amqp.Dial("amqp://guest:guest@127.0.0.1:5672/")
	if err != nil {
		log.Fatal(err)
	}
	ch, _ := conn.Channel()
	_ = ch.Qos(8, 0, false)
	deliveries, err := ch.ConsumeWithContext(ctx, "orders", "", false, false, false, false, nil)
	if err != nil {
		log.Fatal(err)
	}
	scope := once.New(nil).Scope("billing") // use a PostgreSQL or Redis store across processes
	for d := range deliveries {
		// One goroutine per delivery (at most the 8 of the prefetch): a
		// requeue waits up to MaxRequeueDelay, which must not hold up the
		// other deliveries.
		go func() {
			dec, err := onceamqp.Process(ctx, scope, &d, func(ctx context.Context, d *amqp.Delivery) error {
				log.Printf("charging %s", d.Body)
				return nil
			}, nil)
			log.Printf("%s: %v (ack error: %v)", d.MessageId, dec, err)
		}()
	}
}
