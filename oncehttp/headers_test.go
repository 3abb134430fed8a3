package oncehttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// seenResponse is what a real client sees of a response: status, header
// (without the fields that differ per response by nature), body, trailer.
type seenResponse struct {
	status  int
	header  http.Header
	body    string
	trailer http.Header
}

func fetchSeen(t *testing.T, srv *httptest.Server, key string) seenResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("X-User", "buyer")
	req.Header.Set("Idempotency-Key", key)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	h := resp.Header.Clone()
	h.Del("Date")
	h.Del(ReplayedHeader)
	return seenResponse{resp.StatusCode, h, string(b), resp.Trailer}
}

// TestHeadersAfterWriteHeaderAsNetHTTP is issue 13 item 6 on HTTP: a header
// set after WriteHeader (or after the first Write) is dropped, as net/http
// drops it, and a trailer is sent as a trailer; the first client of the
// middleware, every replay and a server without the middleware see the
// same response.
func TestHeadersAfterWriteHeaderAsNetHTTP(t *testing.T) {
	handlers := map[string]http.HandlerFunc{
		"after WriteHeader, with trailers": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Before", "1")
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Trailer", "X-Checksum")
			w.WriteHeader(http.StatusCreated)
			w.Header().Set("X-After", "1")
			w.Header().Set("Content-Type", "application/json")
			w.Header().Del("X-Before")
			_, _ = io.WriteString(w, "created")
			w.Header().Set("X-Checksum", "c0ffee")
			w.Header().Set(http.TrailerPrefix+"X-Late", "late")
		},
		"after the first Write": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/orders/1")
			_, _ = io.WriteString(w, "implicit 200")
			w.Header().Set("Location", "/orders/2")
			w.Header().Set("X-After", "1")
		},
		"after WriteHeader of a 204": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			w.Header().Set("ETag", `"late"`)
		},
	}
	stored := []string{"X-Before", "X-After", "Content-Type", "Location", "ETag", "X-Checksum", "X-Late"}
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		for name, h := range handlers {
			t.Run(name, func(t *testing.T) {
				plain := httptest.NewServer(h)
				defer plain.Close()
				m, err := New(keeper(), Config{Scope: userScope, StoreHeaders: stored})
				require.NoError(t, err)
				guarded := httptest.NewServer(m.Handler(h))
				defer guarded.Close()

				key := newKey(t)
				want := fetchSeen(t, plain, key)
				first := fetchSeen(t, guarded, key)
				replay := fetchSeen(t, guarded, key)
				assert.Equal(t, want, first, "the first client sees what net/http sends")
				assert.Equal(t, want, replay, "every replay sees the same")
				assert.Empty(t, want.header.Get("X-After"), "net/http drops a late header")
			})
		}
	})
}
