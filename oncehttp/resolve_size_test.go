package oncehttp

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/reconcile"
)

// largestStored is the largest response a middleware with the default
// Config stores whole: a body of DefaultMaxStoredBody bytes and headers
// that fill the rest of its outcome cap to the byte.
func largestStored(t *testing.T) StoredResponse {
	t.Helper()
	resp := StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/octet-stream"}, "Location": {"/orders/9"}, "Link": {""}},
		Body:   bytes.Repeat([]byte{0xA5}, DefaultMaxStoredBody),
	}
	limit := outcomeCap(DefaultMaxStoredBody) - envelopeOverhead
	for {
		s := toStored(resp)
		size := s.encodedSize()
		if size == limit {
			return resp
		}
		pad := len(resp.Header.Get("Link")) + limit - size
		require.Positive(t, pad)
		resp.Header.Set("Link", strings.Repeat("l", pad))
	}
}

// TestLargestStoredResponseIsResolvable: the largest response the default
// middleware stores and replays is also accepted as the answer to one of
// its held keys, by ResolveResponse and by a Reconciler of NewReconciler,
// and replayed as given. Both refused it with the Keeper's outcome cap
// (*once.OutcomeTooLargeError), which is below the middleware's: a key held until
// resolved could never be resolved with the response it would have stored.
func TestLargestStoredResponseIsResolvable(t *testing.T) {
	want := largestStored(t)
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		k := keeper(once.WithHoldFor(once.HoldUntilResolved))
		scope := newKey(t)
		m, err := New(k, Config{Scope: func(*http.Request) (string, error) { return scope, nil }})
		require.NoError(t, err)
		srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/held" {
				w.WriteHeader(http.StatusGatewayTimeout)
				return
			}
			for name, v := range want.Header {
				w.Header()[name] = v
			}
			w.WriteHeader(want.Status)
			_, _ = w.Write(want.Body)
		})))
		t.Cleanup(srv.Close)
		c := noRedirects(srv)
		requireAnswer := func(t *testing.T, path, key string, replayed bool) {
			t.Helper()
			r := send(t, c, srv, path, key, "")
			require.Equal(t, want.Status, r.status)
			require.Equal(t, strconv.FormatBool(replayed), strconv.FormatBool(r.header.Get(ReplayedHeader) == "true"))
			require.Equal(t, want.Header.Get("Link"), r.header.Get("Link"))
			require.Equal(t, want.Header.Get("Location"), r.header.Get("Location"))
			require.True(t, bytes.Equal(want.Body, []byte(r.body)), "the body, whole")
		}
		held := func(t *testing.T) string {
			t.Helper()
			key := newKey(t)
			require.Equal(t, http.StatusGatewayTimeout, send(t, c, srv, "/held", key, "").status)
			require.Equal(t, http.StatusConflict, send(t, c, srv, "/held", key, "").status, "held until resolved")
			return key
		}

		t.Run("the middleware stores it", func(t *testing.T) {
			key := newKey(t)
			requireAnswer(t, "/largest", key, false)
			requireAnswer(t, "/largest", key, true)
		})
		t.Run("ResolveResponse", func(t *testing.T) {
			key := held(t)
			require.NoError(t, ResolveResponse(t.Context(), k.Scope(scope), key, nil, want))
			requireAnswer(t, "/held", key, true)
		})
		t.Run("NewReconciler", func(t *testing.T) {
			key := held(t)
			rec, err := NewReconciler(k, func(_ context.Context, hk reconcile.HeldKey) (reconcile.Verdict[StoredResponse], error) {
				return reconcile.Verdict[StoredResponse]{Settled: hk.Key == key, Value: want}, nil
			}, reconcile.Config{Scope: scope})
			require.NoError(t, err)
			rep, err := rec.Pass(t.Context())
			require.NoError(t, err)
			require.Empty(t, rep.Errors)
			require.Equal(t, 1, rep.Resolved)
			requireAnswer(t, "/held", key, true)
		})
	})
}
