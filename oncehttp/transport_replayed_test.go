package oncehttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

// A handler's own 409 (a business conflict) is stored by the Middleware;
// its retry gets it replayed with Idempotent-Replayed: true. The Transport
// treats a replayed answer as final: it cannot change, so retrying it only
// makes the caller wait.
func TestTransportReturnsAReplayedStoredAnswer(t *testing.T) {
	var attempts, runs atomic.Int64
	m, err := oncehttp.New(once.New(nil), oncehttp.Config{
		Scope: func(*http.Request) (string, error) { return "u", nil },
	})
	require.NoError(t, err)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		http.Error(w, "username taken", http.StatusConflict)
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := oncehttp.NewClient(&oncehttp.Transport{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/users", strings.NewReader(`{"name":"a"}`))
	resp, err := c.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, int64(1), runs.Load())
	// The first answer is the handler's own 409 (not replayed, so retried
	// once, as an in-progress 409 would be); the retry's replay is final.
	require.Equal(t, int64(2), attempts.Load())
	require.True(t, oncehttp.Replayed(resp))
}

// Any status marked as replayed is final, even one RetryStatus or
// Stripe-Should-Retry: true would retry; the same status without the
// marker is retried.
func TestTransportReplayMarkerIsFinal(t *testing.T) {
	for _, tc := range []struct {
		name     string
		header   http.Header
		attempts int64
	}{
		{"replayed 503", http.Header{oncehttp.ReplayedHeader: {"true"}}, 1},
		{"replayed 503, Stripe-Should-Retry", http.Header{oncehttp.ReplayedHeader: {"True"}, "Stripe-Should-Retry": {"true"}}, 1},
		{"fresh 503", http.Header{}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				for k, v := range tc.header {
					w.Header()[k] = v
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			defer srv.Close()
			c := oncehttp.NewClient(&oncehttp.Transport{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, strings.NewReader("x"))
			resp, err := c.Do(req)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			require.Equal(t, tc.attempts, attempts.Load())
		})
	}
}
