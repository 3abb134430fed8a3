package mysqlstore_test

import (
	"context"
	"database/sql"
	"log"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/stagedoor/once"
	mysqlstore "github.com/stagedoor/once/backends/mysqlstore"
)

// Migrate at startup, build a Store over your *sql.DB, and run the sweeper
// in a goroutine you own.
func Example() {
	ctx := context.Background()
	db, err := sql.Open("mysql", "app:secret@tcp(db.internal:3306)/app")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	store, err := mysqlstore.New(db, nil)
	if err != nil {
		log.Fatal(err)
	}
	// Close releases the store's prepared statements; db stays open.
	defer store.Close()
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

// once.DoTx with BeginTx makes a database write happen exactly once: the
// claim, the write and the stored outcome commit in one transaction.
func ExampleStore_BeginTx() {
	ctx := context.Background()
	db, err := sql.Open("mysql", "app:secret@tcp(db.internal:3306)/app")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	store, err := mysqlstore.New(db, nil)
	if err != nil {
		log.Fatal(err)
	}
	scope := once.New(store).Scope("ledger")

	id, err := once.DoTx(ctx, scope, "transfer-7f3a", nil, store.BeginTx,
		func(ctx context.Context, tx mysqlstore.Tx) (int64, error) {
			res, err := tx.ExecContext(ctx, "INSERT INTO transfers (amount) VALUES (?)", 4200)
			if err != nil {
				return 0, err
			}
			return res.LastInsertId()
		})
	if err != nil {
		log.Fatal(err)
	}
	log.Println("transfer", id)
}
