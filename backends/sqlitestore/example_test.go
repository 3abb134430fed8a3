package sqlitestore_test

import (
	"context"
	"log"
	"time"

	"github.com/stagedoor/once"
	sqlitestore "github.com/stagedoor/once/backends/sqlitestore"
)

// A file path is all it needs: Migrate creates the file and its table, and
// the records survive the process's restarts.
func Example() {
	ctx := context.Background()
	store, err := sqlitestore.New("/var/lib/myapp/once.db", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
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
