package oncehttp_test

import (
	"context"
	"errors"
	"log"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/oncehttp"
)

// On PostgreSQL, HandlerTx runs the handler in the transaction that claims
// the request's key and stores its response: the order row exists exactly
// when its 201 is stored, and a crash between the two leaves neither.
func ExampleHandlerTx() {
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
	m, err := oncehttp.New(once.New(store), oncehttp.Config{
		Scope: func(r *http.Request) (string, error) {
			if user, _, ok := r.BasicAuth(); ok {
				return user, nil
			}
			return "", errors.New("not signed in")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	placeOrder := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx, _ := oncehttp.Tx[pgx.Tx](r.Context())
		if _, err := tx.Exec(r.Context(), "INSERT INTO orders (item) VALUES ('espresso beans')"); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable) // not stored; rolled back
			return
		}
		w.WriteHeader(http.StatusCreated)
	})

	mux := http.NewServeMux()
	mux.Handle("POST /orders", oncehttp.HandlerTx(m, store.BeginTx, placeOrder))
	log.Fatal(http.ListenAndServe("localhost:8080", mux))
}
