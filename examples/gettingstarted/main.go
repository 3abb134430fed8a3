// Command gettingstarted serves POST /orders on PostgreSQL: each
// Idempotency-Key places one order, however often the request is sent.
//
//	DATABASE_URL=postgres://localhost:5432/shop go run ./examples/gettingstarted
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

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
	handler, err := newServer(ctx, pool, "shop")
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("localhost:8080", handler))
}

// newServer creates the tables in schema (the idempotency records and the
// orders) and returns the shop's routes.
func newServer(ctx context.Context, pool *pgxpool.Pool, schema string) (http.Handler, error) {
	cfg := &postgres.Config{Schema: schema}
	// Safe to run from every instance at once: one migrates, the others wait.
	if err := postgres.Migrate(ctx, pool, cfg); err != nil {
		return nil, err
	}
	store, err := postgres.New(pool, cfg)
	if err != nil {
		return nil, err
	}
	go store.RunSweeper(ctx, time.Minute) // deletes expired records in batches

	_, err = pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+schema+`.orders (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		customer text NOT NULL,
		item text NOT NULL,
		quantity int NOT NULL)`)
	if err != nil {
		return nil, err
	}

	idempotent, err := oncehttp.New(once.New(store), oncehttp.Config{Scope: customer})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders", idempotent.Handler(placeOrder(pool, schema)))
	return mux, nil
}

// customer is the scope of a request's keys: the authenticated caller, so
// that one customer's key is never another's. Put your authentication here;
// this stand-in trusts the name after "Bearer ".
func customer(r *http.Request) (string, error) {
	name, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || name == "" {
		return "", errors.New("not signed in")
	}
	return name, nil
}

type order struct {
	ID       int64  `json:"id"`
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
}

// placeOrder writes one order row. The middleware runs it once per key and
// replays its 201 to every retry with the key.
func placeOrder(pool *pgxpool.Pool, schema string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var o order
		if err := json.NewDecoder(r.Body).Decode(&o); err != nil || o.Item == "" || o.Quantity < 1 {
			// A 400 is not stored: the corrected request may use the same key.
			http.Error(w, `want {"item": "…", "quantity": 1 or more}`, http.StatusBadRequest)
			return
		}
		name, _ := oncehttp.ScopeName(r.Context())
		err := pool.QueryRow(r.Context(),
			`INSERT INTO `+schema+`.orders (customer, item, quantity) VALUES ($1, $2, $3) RETURNING id`,
			name, o.Item, o.Quantity).Scan(&o.ID)
		if err != nil {
			http.Error(w, "the order could not be placed", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", o.ID))
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(o)
	}
}
