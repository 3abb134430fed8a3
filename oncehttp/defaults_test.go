package oncehttp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// firstAnswer serves, behind a middleware with the default Config on k, a
// handler that answers status the first time it runs for a key and 201
// after; runs counts its runs per key.
func firstAnswer(t *testing.T, k *once.Keeper, status int) (srv *httptest.Server, runs func(key string) int) {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	m, err := New(k, Config{Scope: userScope})
	require.NoError(t, err)
	srv = httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := Key(r.Context())
		mu.Lock()
		counts[key]++
		n := counts[key]
		mu.Unlock()
		if n == 1 {
			http.Error(w, http.StatusText(status), status)
			return
		}
		w.Header().Set("Location", "/orders/1")
		w.WriteHeader(http.StatusCreated)
	})))
	t.Cleanup(srv.Close)
	return srv, func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return counts[key]
	}
}

// transportPost sends body with key through a Transport with its defaults.
func transportPost(t *testing.T, url, key string, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(WithKey(t.Context(), key), http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-User", "buyer")
	resp, err := NewClient(&Transport{}).Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// clients are the clients a user of the middleware calls it with, each
// with its default settings: the library's Transport and stripe-go.
var clients = map[string]func(t *testing.T, url, key string, body []byte) int{
	"Transport": transportPost,
	"stripe-go": func(t *testing.T, url, key string, body []byte) int {
		status, _ := stripeClient{client: http.DefaultClient}.post(t, url, key, body)
		return status
	},
}

// TestTransient503IsRetriedWithDefaults: a handler that answers 503
// (nothing happened: overloaded, a breaker open) and then 201 is retried
// to its 201 by the Transport and by stripe-go, every default kept. The
// 503 held the key for a lease: the retry got 409 and both clients gave
// up with it.
func TestTransient503IsRetriedWithDefaults(t *testing.T) {
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		srv, runs := firstAnswer(t, keeper(), http.StatusServiceUnavailable)
		for name, post := range clients {
			t.Run(name, func(t *testing.T) {
				key := newKey(t)
				require.Equal(t, http.StatusCreated, post(t, srv.URL, key, []byte(`{"sku":"a"}`)))
				require.Equal(t, 2, runs(key), "the 503, then the 201")
			})
		}
	})
}

// TestGatewayTimeoutNeverRunsTwiceWithDefaults: a handler's 504 (its
// downstream call timed out after the request left: done or not, unknown)
// holds the key, so that neither client's retries run the handler again;
// each ends with the held key's 409.
func TestGatewayTimeoutNeverRunsTwiceWithDefaults(t *testing.T) {
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		srv, runs := firstAnswer(t, keeper(), http.StatusGatewayTimeout)
		for name, post := range clients {
			t.Run(name, func(t *testing.T) {
				key := newKey(t)
				require.Equal(t, http.StatusConflict, post(t, srv.URL, key, []byte(`{"sku":"a"}`)))
				require.Equal(t, 1, runs(key))
			})
		}
	})
}

// TestHeldRetryAfterTellsWhenARetryRuns: a held key's 409 says when a
// request with the key runs the handler again: Retry-After the hold left,
// and none for a key held until resolved, which no wait ends (it said
// 9223372037 seconds).
func TestHeldRetryAfterTellsWhenARetryRuns(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hold       time.Duration
		retryAfter bool
	}{
		{"a hold", 5 * time.Second, true},
		{"held until resolved", once.HoldUntilResolved, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, runs := firstAnswer(t, once.New(nil, once.WithHoldFor(tc.hold)), http.StatusGatewayTimeout)
			key := newKey(t)
			c := srv.Client()
			require.Equal(t, http.StatusGatewayTimeout, send(t, c, srv, "/", key, "").status)
			r := send(t, c, srv, "/", key, "")
			require.Equal(t, http.StatusConflict, r.status)
			require.Equal(t, keyHeld, r.problem(t).KeyState)
			if !tc.retryAfter {
				require.NotContains(t, r.header, "Retry-After")
			} else {
				assertRetryAfter(t, r, 1, 5)
			}
			require.Equal(t, 1, runs(key))
		})
	}
}
