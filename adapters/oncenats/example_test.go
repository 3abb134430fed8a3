package oncenats_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/oncenats"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/consume"
)

// Consume a JetStream stream with a durable consumer: each message's
// handler runs once per Nats-Msg-Id, and the message is acked, naked with a
// delay or terminated as consume.Do decides.
func ExampleHandlerFunc() {
	ctx := context.Background()
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	cons, err := js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		log.Fatal(err)
	}
	scope := once.New(nil).Scope("billing") // use a PostgreSQL or Redis store across processes
	charge := func(ctx context.Context, msg jetstream.Msg) error {
		log.Printf("charging %s", msg.Data())
		return nil
	}
	cc, err := cons.Consume(oncenats.HandlerFunc(ctx, scope, charge, &oncenats.Config{
		OnDecision: func(msg jetstream.Msg, d consume.Decision, ackErr error) { log.Printf("%s: %v", msg.Subject(), d) },
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Stop()
}

// Write the effect in the transaction of the claim: a consumer killed at any
// point leaves the effect and its record both committed or both absent.
func ExampleProcessTx() {
	ctx := context.Background()
	pool, _ := pgxpool.New(ctx, "postgres://localhost/app")
	store, _ := postgres.New(pool, nil)
	scope := once.New(store).Scope("billing")
	var msg jetstream.Msg // from Consumer.Next, Fetch or Consume
	d, err := oncenats.ProcessTx(ctx, scope, msg, store.BeginTx, func(ctx context.Context, tx pgx.Tx, msg jetstream.Msg) error {
		_, err := tx.Exec(ctx, "INSERT INTO charges (order_id) VALUES ($1)", msg.Headers().Get("Order-Id"))
		return err
	}, &oncenats.Config{Key: oncenats.HeaderKey("Order-Id")})
	log.Print(d, err)
}
