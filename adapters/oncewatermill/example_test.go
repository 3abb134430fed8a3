package oncewatermill_test

import (
	"context"
	"log"

	"github.com/ThreeDotsLabs/watermill"
	wamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncewatermill"
)

// Replace middleware.Deduplicator: the handler runs once per message UUID,
// a failed handler runs again on the redelivery, a duplicate republishes
// the stored output, and bad messages go to the poison queue.
func ExampleMiddleware() {
	logger := watermill.NewStdLogger(false, false)
	cfg := wamqp.NewDurableQueueConfig("amqp://guest:guest@127.0.0.1:5672/")
	pub, err := wamqp.NewPublisher(cfg, logger)
	if err != nil {
		log.Fatal(err)
	}
	sub, err := wamqp.NewSubscriber(cfg, logger)
	if err != nil {
		log.Fatal(err)
	}
	router, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		log.Fatal(err)
	}
	poison, err := middleware.PoisonQueueWithFilter(pub, "orders.poison", oncewatermill.IsDeadLetter)
	if err != nil {
		log.Fatal(err)
	}
	scope := once.New(nil).Scope("billing") // use a PostgreSQL or Redis store across processes
	router.AddMiddleware(poison, oncewatermill.Middleware(scope, nil))
	router.AddHandler("billing", "orders", sub, "receipts", pub, func(msg *message.Message) ([]*message.Message, error) {
		return []*message.Message{message.NewMessage(watermill.NewUUID(), []byte("receipt"))}, nil
	})
	if err := router.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
}
