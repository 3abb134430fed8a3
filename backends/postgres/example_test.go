package postgres_test

import (
	"context"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
)

// Build a Store over your pool, migrate at startup, and run the sweeper in
// a goroutine you own.
func Example() {
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
	if err := store.Migrate(ctx); err != nil { // safe from many instances at once
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
