package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
)

type response struct {
	status int
	header http.Header
	body   string
}

// client sends real requests to the service under test.
type client struct {
	t   *testing.T
	url string
}

func (c client) post(user, key, body string, header ...string) response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.url+"/orders", strings.NewReader(body))
	require.NoError(c.t, err)
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+user)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return response{resp.StatusCode, resp.Header, string(b)}
}

func TestOrdersPlacedOncePerKey(t *testing.T) {
	exstoretest.Each(t, "httpapi", func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		store, closeStore, err := exstore.Open(context.Background(), cfg)
		require.NoError(t, err)
		t.Cleanup(closeStore)
		h, shop, err := newServer(once.New(store), time.Second)
		require.NoError(t, err)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		c := client{t, srv.URL}
		const body = `{"hold_ids":[88211,88212],"card":"4242424242424242"}`

		t.Log("no credentials: 401, nothing claimed")
		r := c.post("", "k-anon", body)
		assert.Equal(t, http.StatusUnauthorized, r.status)
		assert.Equal(t, "application/problem+json", r.header.Get("Content-Type"))

		t.Log("no key: 400")
		assert.Equal(t, http.StatusBadRequest, c.post("buyer-42", "", body).status)

		t.Log("replay: the same key twice is one order")
		first := c.post("buyer-42", "k-replay", body)
		require.Equal(t, http.StatusCreated, first.status, first.body)
		assert.Empty(t, first.header.Get("Idempotent-Replayed"))
		assert.True(t, strings.HasPrefix(first.header.Get("Location"), "/orders/"))
		second := c.post("buyer-42", "k-replay", body)
		require.Equal(t, http.StatusCreated, second.status, second.body)
		assert.Equal(t, "true", second.header.Get("Idempotent-Replayed"))
		assert.Equal(t, first.header.Get("Location"), second.header.Get("Location"))
		assert.Equal(t, first.body, second.body)

		t.Log("another user with the same key is another order")
		other := c.post("buyer-7", "k-replay", body)
		require.Equal(t, http.StatusCreated, other.status)
		assert.NotEqual(t, first.header.Get("Location"), other.header.Get("Location"))

		t.Log("422: the same key with another body")
		reused := c.post("buyer-42", "k-replay", `{"hold_ids":[99999],"card":"4242424242424242"}`)
		assert.Equal(t, http.StatusUnprocessableEntity, reused.status)
		assert.Contains(t, reused.body, "idempotency-key-reused")

		t.Log("409: a duplicate while the first request runs")
		slow := make(chan response, 1)
		go func() { slow <- c.post("buyer-42", "k-slow", body, "X-Simulate", "slow") }()
		require.Eventually(t, func() bool { return shop.running.Load() == 1 }, 900*time.Millisecond, 5*time.Millisecond,
			"the slow request reaches the handler")
		dup := c.post("buyer-42", "k-slow", body)
		assert.Equal(t, http.StatusConflict, dup.status, dup.body)
		assert.NotEmpty(t, dup.header.Get("Retry-After"))
		assert.Contains(t, dup.body, "request-in-progress")
		firstSlow := <-slow
		require.Equal(t, http.StatusCreated, firstSlow.status, firstSlow.body)
		after := c.post("buyer-42", "k-slow", body)
		assert.Equal(t, http.StatusCreated, after.status)
		assert.Equal(t, "true", after.header.Get("Idempotent-Replayed"))
		assert.Equal(t, firstSlow.header.Get("Location"), after.header.Get("Location"))

		t.Log("402: a declined card is replayed, not retried")
		declined := `{"hold_ids":[88213],"card":"4000000000000002"}`
		d1 := c.post("buyer-42", "k-declined", declined)
		d2 := c.post("buyer-42", "k-declined", declined)
		assert.Equal(t, http.StatusPaymentRequired, d1.status)
		assert.Equal(t, http.StatusPaymentRequired, d2.status)
		assert.Equal(t, "true", d2.header.Get("Idempotent-Replayed"))
		assert.Equal(t, d1.body, d2.body)

		t.Log("the order is readable at its Location")
		get, err := http.NewRequest(http.MethodGet, srv.URL+first.header.Get("Location"), nil)
		require.NoError(t, err)
		get.Header.Set("Authorization", "Bearer buyer-42")
		resp, err := http.DefaultClient.Do(get)
		require.NoError(t, err)
		var o order
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&o))
		resp.Body.Close()
		assert.Equal(t, "buyer-42", o.Buyer)

		placed, declinedCount := shop.counts()
		assert.Equal(t, 3, placed, "one order per (user, key): k-replay twice, k-replay by buyer-7, k-slow")
		assert.Equal(t, 1, declinedCount, "the decline ran once")
	})
}
