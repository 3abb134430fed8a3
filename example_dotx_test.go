package once_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
)

// A checkout writes its order row exactly once: the claim of the key, the
// row and the stored order ID commit in one transaction, which the
// PostgreSQL store's BeginTx begins. A retry with the key gets the same
// order ID and inserts nothing; a crash before the commit leaves neither
// the row nor the claim, and the retry inserts the row.
func ExampleDoTx() {
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
