package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
)

type answer struct {
	status int
	header http.Header
	body   string
}

// send sends POST /orders as the README's curl calls do: customer (empty:
// no Authorization) and key (empty: no Idempotency-Key).
func send(ctx context.Context, url, customer, key, body string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/orders", strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if customer != "" {
		req.SetBasicAuth(customer, "")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}, err
}

func post(t *testing.T, url, customer, key, body string) answer {
	t.Helper()
	a, err := send(t.Context(), url, customer, key, body)
	require.NoError(t, err)
	return a
}

// sendLater sends a request in the background; its answer comes on the
// channel.
func sendLater(ctx context.Context, url, customer, key, body string) <-chan answer {
	c := make(chan answer, 1)
	go func() {
		a, err := send(ctx, url, customer, key, body)
		if err != nil {
			a.body = err.Error()
		}
		c <- a
	}()
	return c
}

// freshDatabase creates a database of its own for the program, which uses
// the default schema and table names, and returns a pool on it; the
// database is dropped when t ends.
func freshDatabase(t *testing.T, ctx context.Context) *pgxpool.Pool {
	cfg := exstoretest.Config(t, exstore.Postgres, "gettingstarted")
	admin, err := exstore.OpenPool(ctx, cfg.PostgresURL)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	name := pgx.Identifier{cfg.Name}.Sanitize()
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	u, err := url.Parse(cfg.PostgresURL)
	require.NoError(t, err)
	u.Path = "/" + cfg.Name
	pool, err := exstore.OpenPool(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() {
		pool.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		assert.NoError(t, err)
	})
	return pool
}

// TestGettingStarted runs the README's program on PostgreSQL, in a
// database of its own, and sends the README's curl sequence.
func TestGettingStarted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // stops the sweeper
	pool := freshDatabase(t, ctx)
	handler, err := newServer(ctx, pool)
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	orders := func(customer string) (n int) {
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM orders WHERE customer = $1", customer).Scan(&n))
		return n
	}
	const body = `{"item": "espresso beans", "quantity": 2}`

	t.Log("the first request places the order: 201")
	first := post(t, srv.URL, "alice", "7f3a9c2e", body)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	assert.Empty(t, first.header.Values("Idempotent-Replayed"))
	assert.Equal(t, "/orders/1", first.header.Get("Location"))
	assert.JSONEq(t, `{"id": 1, "item": "espresso beans", "quantity": 2}`, first.body)

	t.Log("the same request again: the same 201, replayed; no second row")
	again := post(t, srv.URL, "alice", "7f3a9c2e", body)
	require.Equal(t, http.StatusCreated, again.status, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.Equal(t, first.header.Get("Location"), again.header.Get("Location"))
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, 1, orders("alice"))

	t.Log("the same key with another body: 422")
	reused := post(t, srv.URL, "alice", "7f3a9c2e", `{"item": "espresso beans", "quantity": 3}`)
	assert.Equal(t, http.StatusUnprocessableEntity, reused.status, reused.body)
	assert.Equal(t, "application/problem+json", reused.header.Get("Content-Type"))
	assert.Contains(t, reused.body, "idempotency-key-reused")

	t.Log("no key: 400; no caller: 401")
	missing := post(t, srv.URL, "alice", "", body)
	assert.Equal(t, http.StatusBadRequest, missing.status, missing.body)
	assert.Contains(t, missing.body, "idempotency-key-missing")
	anonymous := post(t, srv.URL, "", "5b2d8e17", body)
	assert.Equal(t, http.StatusUnauthorized, anonymous.status, anonymous.body)
	assert.Equal(t, 1, orders("alice"), "none of these ran the handler")

	t.Log("a duplicate while the first runs waits for it, then gets its 201")
	// Hold the first request inside its INSERT: a lock that conflicts with it.
	blocker, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(context.Background()) }()
	_, err = blocker.Exec(ctx, "LOCK TABLE orders IN SHARE MODE")
	require.NoError(t, err)
	waiting := func(n int) func() bool {
		return func() bool {
			var w int
			err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&w)
			return err == nil && w >= n
		}
	}
	slow := sendLater(ctx, srv.URL, "bob", "0c61f0d8", body)
	require.Eventually(t, waiting(1), 10*time.Second, 10*time.Millisecond, "the first request waits in its INSERT")
	dup := sendLater(ctx, srv.URL, "bob", "0c61f0d8", body)
	require.Eventually(t, waiting(2), 10*time.Second, 10*time.Millisecond, "the duplicate waits for the first's transaction")
	require.NoError(t, blocker.Commit(ctx))
	firstSlow := <-slow
	require.Equal(t, http.StatusCreated, firstSlow.status, firstSlow.body)
	assert.Empty(t, firstSlow.header.Values("Idempotent-Replayed"))
	assert.Equal(t, "/orders/2", firstSlow.header.Get("Location"))
	d := <-dup
	if d.status == http.StatusConflict {
		// The first request outlasted the lock timeout (5 s) on a slow
		// machine: the duplicate was told when to ask again.
		assert.Equal(t, "1", d.header.Get("Retry-After"))
		d = post(t, srv.URL, "bob", "0c61f0d8", body)
	}
	require.Equal(t, http.StatusCreated, d.status, d.body)
	assert.Equal(t, "true", d.header.Get("Idempotent-Replayed"))
	assert.Equal(t, firstSlow.body, d.body)

	t.Log("one row per intent")
	assert.Equal(t, 1, orders("alice"))
	assert.Equal(t, 1, orders("bob"))
}
