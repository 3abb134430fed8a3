package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	req.Header.Set("Content-Type", "application/json")
	if customer != "" {
		req.Header.Set("Authorization", "Bearer "+customer)
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

// TestGettingStarted runs the README's program on PostgreSQL, in a schema
// of its own (dropped at the end), and sends the README's curl sequence.
func TestGettingStarted(t *testing.T) {
	cfg := exstoretest.Config(t, exstore.Postgres, "gettingstarted")
	schema := cfg.Name
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel() // stops the sweeper
	pool, err := exstore.OpenPool(ctx, cfg.PostgresURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		assert.NoError(t, err)
		pool.Close()
	})
	handler, err := newServer(ctx, pool, schema)
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	orders := func() (n int) {
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+schema+".orders").Scan(&n))
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
	assert.Equal(t, 1, orders())

	t.Log("the same key with another body: 422")
	reused := post(t, srv.URL, "alice", "7f3a9c2e", `{"item": "espresso beans", "quantity": 3}`)
	assert.Equal(t, http.StatusUnprocessableEntity, reused.status, reused.body)
	assert.Equal(t, "application/problem+json", reused.header.Get("Content-Type"))

	t.Log("no key: 400")
	missing := post(t, srv.URL, "alice", "", body)
	assert.Equal(t, http.StatusBadRequest, missing.status, missing.body)
	assert.Equal(t, 1, orders(), "neither the 422 nor the 400 ran the handler")

	t.Log("a duplicate while the first runs: 409 with Retry-After")
	// Hold the first request inside its INSERT: a lock that conflicts with it.
	blocker, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(context.Background()) }()
	_, err = blocker.Exec(ctx, "LOCK TABLE "+schema+".orders IN SHARE MODE")
	require.NoError(t, err)
	type sent struct {
		answer
		err error
	}
	slow := make(chan sent, 1)
	go func() {
		a, err := send(ctx, srv.URL, "alice", "0c61f0d8", body)
		slow <- sent{a, err}
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks
			WHERE relation = $1::regclass AND NOT granted)`, schema+".orders").Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "the first request waits in its INSERT")
	// Without the middleware this duplicate would wait for the lock too.
	dupCtx, cancelDup := context.WithTimeout(ctx, 10*time.Second)
	defer cancelDup()
	dup, err := send(dupCtx, srv.URL, "alice", "0c61f0d8", body)
	require.NoError(t, err, "the duplicate is answered while the first request runs")
	assert.Equal(t, http.StatusConflict, dup.status, dup.body)
	assert.NotEmpty(t, dup.header.Get("Retry-After"))
	assert.Empty(t, dup.header.Values("Idempotent-Replayed"))
	require.NoError(t, blocker.Commit(ctx))
	firstSlow := <-slow
	require.NoError(t, firstSlow.err)
	assert.Equal(t, http.StatusCreated, firstSlow.status, firstSlow.body)
	assert.Equal(t, "/orders/2", firstSlow.header.Get("Location"))

	t.Log("one row per key")
	assert.Equal(t, 2, orders())
}
