// Command gettingstarted serves POST /orders on PostgreSQL: each
// Idempotency-Key places one order, however often the request is sent.
//
//	DATABASE_URL=postgres://localhost:5432/shop go run ./examples/gettingstarted
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/oncehttp"
)

func main() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	handler, err := newServer(ctx, pool)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("localhost:8080", handler))
}

// newServer creates the tables (idempotency records, orders); it returns the routes.
func newServer(ctx context.Context, pool *pgxpool.Pool) (http.Handler, error) {
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS orders (id bigint GENERATED ALWAYS
		AS IDENTITY PRIMARY KEY, customer text, item text, quantity int)`); err != nil {
		return nil, err
	}
	store, err := postgres.New(pool, nil)
	if err != nil {
		return nil, err
	}
	// Safe to run from every instance at once: one migrates, the others wait.
	if err := store.Migrate(ctx); err != nil {
		return nil, err
	}
	go store.RunSweeper(ctx, time.Minute) // deletes expired records in batches
	idempotent, err := oncehttp.New(once.New(store), oncehttp.Config{
		// A key's scope: the authenticated customer, so that one customer's key is
		// never another's. Check a password or token; this trusts the user name.
		Scope: func(r *http.Request) (string, error) {
			name, _, _ := r.BasicAuth() // none: 401
			return name, nil
		},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders", oncehttp.HandlerTx(idempotent, store.BeginTx, http.HandlerFunc(placeOrder)))
	return mux, nil
}

// placeOrder inserts an order row in the transaction that stores its 201:
// both commit, or neither. Every retry with the key gets the 201, replayed.
func placeOrder(w http.ResponseWriter, r *http.Request) {
	var o struct {
		ID       int64  `json:"id"`
		Item     string `json:"item"`
		Quantity int    `json:"quantity"`
	}
	if json.NewDecoder(r.Body).Decode(&o) != nil || o.Item == "" || o.Quantity < 1 {
		http.Error(w, "want an item and a quantity", http.StatusBadRequest) // not stored
		return
	}
	tx, _ := oncehttp.Tx[pgx.Tx](r.Context())
	name, _ := oncehttp.ScopeName(r.Context())
	if err := tx.QueryRow(r.Context(), `INSERT INTO orders (customer, item, quantity)
		VALUES ($1, $2, $3) RETURNING id`, name, o.Item, o.Quantity).Scan(&o.ID); err != nil {
		http.Error(w, "try again", http.StatusServiceUnavailable) // not stored; rolled back
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/orders/%d", o.ID))
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(o)
}
