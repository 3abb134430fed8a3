package postgres_test

import (
	"context"
	"log"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
)

// Migrate at startup, build a Store over your pool, and run the sweeper in
// a goroutine you own.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	if err := postgres.Migrate(ctx, pool, nil); err != nil { // safe from many instances at once
		log.Fatal(err)
	}
	store, err := postgres.New(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = store.RunSweeper(ctx, time.Minute) }()

	keeper := once.New(store)
	receipt, err := once.Do(ctx, keeper.Scope("user-42"), "9b1e4d3a", nil,
		func(ctx context.Context) (string, error) {
			return "charged 42.00 EUR", nil // call the payment provider here
		})
	if err != nil {
		log.Fatal(err)
	}
	log.Println(receipt)
}

// once.DoTx with BeginTx makes a database write happen exactly once: the
// claim, the write and the stored outcome commit in one transaction.
func ExampleStore_BeginTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := postgres.New(pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	scope := once.New(store).Scope("user-42")

	orderID, err := once.DoTx(ctx, scope, "checkout-7f3a", nil, store.BeginTx,
		func(ctx context.Context, tx pgx.Tx) (int64, error) {
			var id int64
			err := tx.QueryRow(ctx, "INSERT INTO orders (user_id, total) VALUES (42, 4200) RETURNING id").Scan(&id)
			return id, err
		})
	if err != nil {
		log.Fatal(err)
	}
	log.Println("order", orderID)
}
