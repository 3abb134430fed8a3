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

// A handler's own 409 (a business conflict) is its first execution's
// answer: the Transport returns it as it came, every header and cookie
// included, instead of retrying it into the stored copy. A later call
// with the key gets it replayed (Idempotent-Replayed: true), and that is
// final too: it cannot change, so retrying it only makes the caller wait.
func TestTransportReturnsAHandlersOwn409(t *testing.T) {
	var attempts, runs atomic.Int64
	m, err := oncehttp.New(once.New(nil), oncehttp.Config{
		Scope: func(*http.Request) (string, error) { return "u", nil },
	})
	require.NoError(t, err)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("X-Existing-User", "/users/7")
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "v"})
		http.Error(w, "username taken", http.StatusConflict)
	}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := oncehttp.NewClient(&oncehttp.Transport{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})
	ctx := oncehttp.WithKey(context.Background(), "signup-a")
	do := func() *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/users", strings.NewReader(`{"name":"a"}`))
		resp, err := c.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusConflict, resp.StatusCode)
		return resp
	}

	first := do()
	require.Equal(t, int64(1), attempts.Load(), "the first execution's 409 is not retried")
	require.False(t, oncehttp.Replayed(first))
	require.Equal(t, "/users/7", first.Header.Get("X-Existing-User"))
	require.Len(t, first.Cookies(), 1)

	again := do()
	require.Equal(t, int64(2), attempts.Load(), "the replay is final")
	require.True(t, oncehttp.Replayed(again))
	require.Equal(t, int64(1), runs.Load())
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
