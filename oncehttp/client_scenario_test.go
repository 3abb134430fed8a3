package oncehttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/testservers"
)

// TestClientAgainstMiddlewareOnEveryStore runs the Transport against the
// Middleware on memory, PostgreSQL and Redis, over real connections.
func TestClientAgainstMiddlewareOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runClientScenario(t, newStore(t))
		})
	}
}

// service is an orders API behind the Middleware, wrapped in a tap that
// records every attempt that reaches the server and can drop the
// connection of a processed request before its answer is sent.
type service struct {
	mu       sync.Mutex
	effects  map[string]int      // key → handler side effects
	attempts map[string][][]byte // key → bodies of the attempts received
	dropped  map[string]bool     // keys whose first answer was dropped
	release  chan struct{}       // /slow returns when closed
	started  chan struct{}       // /slow has started
}

func (s *service) effect(r *http.Request) int {
	key, _ := Key(r.Context())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.effects[key]++
	return s.effects[key]
}

func (s *service) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.effects[key]
}

func (s *service) bodies(key string) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[key]
}

func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		n := s.effect(r)
		w.Header().Set("Location", fmt.Sprintf("/orders/%d", n))
		w.WriteHeader(http.StatusCreated)
	})
	var limited sync.Map
	mux.HandleFunc("POST /limited", func(w http.ResponseWriter, r *http.Request) {
		key, _ := Key(r.Context())
		if _, seen := limited.LoadOrStore(key, true); !seen {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests) // nothing done; not stored
			return
		}
		s.effect(r)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("POST /invalid", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
	})
	mux.HandleFunc("POST /flaky", func(w http.ResponseWriter, r *http.Request) {
		s.effect(r)
		w.WriteHeader(http.StatusGatewayTimeout) // outcome unknown: held
	})
	mux.HandleFunc("POST /slow", func(w http.ResponseWriter, r *http.Request) {
		s.effect(r)
		s.started <- struct{}{}
		<-s.release
		w.WriteHeader(http.StatusCreated)
	})
	return mux
}

// tap records each attempt and, for ?drop=1, lets the first attempt of a
// key be processed and then closes its connection without an answer.
func (s *service) tap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		key, _ := unquote(r.Header.Get(DefaultHeader))
		s.mu.Lock()
		s.attempts[key] = append(s.attempts[key], body)
		drop := r.URL.Query().Get("drop") == "1" && !s.dropped[key]
		if drop {
			s.dropped[key] = true
		}
		s.mu.Unlock()
		if !drop {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(httptest.NewRecorder(), r) // processed and stored
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
}

func runClientScenario(t *testing.T, store backends.Store) {
	s := &service{
		effects: map[string]int{}, attempts: map[string][][]byte{}, dropped: map[string]bool{},
		release: make(chan struct{}), started: make(chan struct{}, 1),
	}
	start := func(k *once.Keeper) *httptest.Server {
		m, err := New(k, Config{Scope: userScope})
		require.NoError(t, err)
		srv := httptest.NewServer(s.tap(m.Handler(s.routes())))
		t.Cleanup(srv.Close)
		return srv
	}
	// A one-second lease makes the 409's Retry-After 1; the other server
	// keeps the default lease, so a held key says 30.
	short := start(once.New(store, once.WithLease(time.Second)))
	long := start(once.New(store))

	type result struct {
		resp    *http.Response
		err     error
		retries []Retry
		key     string
	}
	do := func(t *testing.T, ctx context.Context, srv *httptest.Server, path string) result {
		t.Helper()
		var res result
		var mu sync.Mutex
		res.key = NewKey()
		tr := &Transport{Base: &http.Transport{}, BaseDelay: 5 * time.Millisecond, OnRetry: func(r Retry) {
			mu.Lock()
			res.retries = append(res.retries, r)
			mu.Unlock()
		}}
		t.Cleanup(tr.Base.(*http.Transport).CloseIdleConnections)
		req, err := http.NewRequestWithContext(WithKey(ctx, res.key), http.MethodPost, srv.URL+path, bytes.NewReader(binaryBody))
		require.NoError(t, err)
		req.Header.Set("X-User", "buyer")
		res.resp, res.err = NewClient(tr).Do(req)
		if res.err == nil {
			_, _ = io.Copy(io.Discard, res.resp.Body)
			res.resp.Body.Close()
		}
		for i, b := range s.bodies(res.key) {
			require.Equal(t, binaryBody, b, "attempt %d carries the body byte for byte", i+1)
		}
		return res
	}

	t.Run("processed then the connection drops", func(t *testing.T) {
		res := do(t, context.Background(), short, "/orders?drop=1")
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusCreated, res.resp.StatusCode)
		assert.True(t, Replayed(res.resp), "the retry got the stored answer")
		assert.Equal(t, "/orders/1", res.resp.Header.Get("Location"))
		assert.Equal(t, 1, s.count(res.key), "one effect")
		assert.GreaterOrEqual(t, len(s.bodies(res.key)), 2)
	})

	t.Run("409 twice then 201", func(t *testing.T) {
		key := NewKey()
		holder := make(chan int, 1)
		go func() { // the first request with the key, still running
			req, _ := http.NewRequest(http.MethodPost, short.URL+"/slow", bytes.NewReader(binaryBody))
			req.Header.Set("X-User", "buyer")
			req.Header.Set(DefaultHeader, key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				holder <- 0
				return
			}
			resp.Body.Close()
			holder <- resp.StatusCode
		}()
		<-s.started
		var retries []Retry
		tr := &Transport{Base: &http.Transport{}, OnRetry: func(r Retry) {
			retries = append(retries, r)
			if r.Attempt == 2 {
				close(s.release)
			}
		}}
		req, err := http.NewRequest(http.MethodPost, short.URL+"/slow", bytes.NewReader(binaryBody))
		require.NoError(t, err)
		req.Header.Set("X-User", "buyer")
		req.Header.Set(DefaultHeader, key)
		resp, err := NewClient(tr).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusCreated, <-holder)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.True(t, Replayed(resp))
		require.Len(t, retries, 2)
		for _, r := range retries {
			assert.Equal(t, http.StatusConflict, r.Status)
			assert.Equal(t, time.Second, r.Delay, "Retry-After: the one-second lease left")
		}
		assert.Equal(t, 1, s.count(key), "one effect")
		require.Len(t, s.bodies(key), 4, "the holder and three attempts")
		for _, b := range s.bodies(key) {
			assert.Equal(t, binaryBody, b)
		}
	})

	t.Run("429 with Retry-After", func(t *testing.T) {
		res := do(t, context.Background(), short, "/limited")
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusCreated, res.resp.StatusCode)
		assert.False(t, Replayed(res.resp), "the 429 was not stored: the retry ran the handler")
		require.Len(t, res.retries, 1)
		assert.Equal(t, http.StatusTooManyRequests, res.retries[0].Status)
		assert.Equal(t, time.Second, res.retries[0].Delay)
		assert.Equal(t, 1, s.count(res.key), "one effect")
	})

	t.Run("422 is not retried", func(t *testing.T) {
		res := do(t, context.Background(), short, "/invalid")
		require.NoError(t, res.err)
		assert.Equal(t, http.StatusUnprocessableEntity, res.resp.StatusCode)
		assert.Empty(t, res.retries)
		assert.Len(t, s.bodies(res.key), 1)
		assert.Equal(t, 0, s.count(res.key))
	})

	t.Run("the context deadline ends the retries", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		res := do(t, ctx, long, "/flaky")
		require.NoError(t, res.err)
		// 504 (held), then 409 with Retry-After: 30, the hold left, which
		// the deadline cannot wait for: that answer is returned.
		assert.Equal(t, http.StatusConflict, res.resp.StatusCode)
		assert.Equal(t, "30", res.resp.Header.Get("Retry-After"))
		require.Len(t, res.retries, 1)
		assert.Equal(t, http.StatusGatewayTimeout, res.retries[0].Status)
		assert.NoError(t, ctx.Err(), "returned without waiting for the deadline")
		assert.Equal(t, 1, s.count(res.key), "one effect")
	})
}
