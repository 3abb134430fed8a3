package oncehttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// shop is the service under test: orders, charges, and routes that block,
// fail or panic on demand. Every route counts its executions.
type shop struct {
	orders, charges, slow, timeouts, breakers, panics, big atomic.Int64

	slowStarted chan struct{} // receives when /slow starts
	slowRelease chan struct{} // /slow returns when closed or sent to
}

func newShop() *shop {
	return &shop{slowStarted: make(chan struct{}, 16), slowRelease: make(chan struct{})}
}

func (s *shop) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		n := s.orders.Add(1)
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", n))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=secret; HttpOnly")
		w.Header().Set("X-Not-Stored", "1")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": n, "request": string(body)})
	})
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		s.orders.Add(0)
		_, _ = io.WriteString(w, "list")
	})
	mux.HandleFunc("POST /charges", func(w http.ResponseWriter, r *http.Request) {
		s.charges.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusPaymentRequired)
		_, _ = io.WriteString(w, `{"type":"https://stagedoor.example/problems/card-declined","title":"Card declined","status":402}`)
	})
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		s.slow.Add(1)
		s.slowStarted <- struct{}{}
		<-s.slowRelease
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "slow done")
	})
	mux.HandleFunc("POST /timeout", func(w http.ResponseWriter, r *http.Request) {
		s.timeouts.Add(1)
		http.Error(w, "payrail timed out", http.StatusGatewayTimeout)
	})
	mux.HandleFunc("POST /breaker", func(w http.ResponseWriter, r *http.Request) {
		if s.breakers.Add(1) == 1 {
			http.Error(w, "breaker open", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("POST /panic", func(w http.ResponseWriter, r *http.Request) {
		if s.panics.Add(1) == 1 {
			w.Header().Set("Location", "/orders/lost")
			w.WriteHeader(http.StatusCreated) // buffered, never sent
			panic("boom")
		}
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("POST /big", func(w http.ResponseWriter, r *http.Request) {
		s.big.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		for range 8 {
			_, _ = io.WriteString(w, strings.Repeat("x", 1024))
			http.NewResponseController(w).Flush() //nolint:errcheck
		}
	})
	return mux
}

// userScope is the test's authentication: the X-User header names the
// principal. A real service reads it from a verified session or token.
func userScope(r *http.Request) (string, error) {
	u := r.Header.Get("X-User")
	if u == "" {
		return "", errors.New("no user")
	}
	return u, nil
}

// serve starts a real HTTP server with the shop behind the middleware.
func serve(t *testing.T, k *once.Keeper, cfg Config, s *shop) *httptest.Server {
	t.Helper()
	if cfg.Scope == nil {
		cfg.Scope = userScope
	}
	m, err := New(k, cfg)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(m.Handler(s.routes()))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the panic test is noisy
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (r reply) problem(t *testing.T) problem {
	t.Helper()
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"), "body: %s", r.body)
	var p problem
	require.NoError(t, json.Unmarshal([]byte(r.body), &p), r.body)
	require.Equal(t, r.status, p.Status)
	require.NotEmpty(t, p.Title)
	require.NotEmpty(t, p.Detail)
	return p
}

// call sends one request with a real client. key "" sends no key header.
func call(t *testing.T, srv *httptest.Server, method, path, user, key, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if user != "" {
		req.Header.Set("X-User", user)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

var keySeq atomic.Int64

// newKey returns a key unique to this process run, so the scenario can run
// repeatedly against a persistent store.
func newKey(t *testing.T) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "."), time.Now().UnixNano(), keySeq.Add(1))
}

// eventually polls f until it returns true or the deadline passes.
func eventually(t *testing.T, d time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertRetryAfter checks that r carries Retry-After in whole seconds
// within [lo, hi].
func assertRetryAfter(t *testing.T, r reply, lo, hi int) {
	t.Helper()
	v, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
	assert.GreaterOrEqual(t, v, lo)
	assert.LessOrEqual(t, v, hi)
}
