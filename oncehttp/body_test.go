package oncehttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// A client that goes away while sending its body (a Content-Length of
// 1000, ten bytes, then the connection closed) never reaches the handler
// with the default fingerprint, which reads the body before the claim:
// it is answered 400 request-body-invalid, nothing is claimed or stored,
// and its retry with the key runs the handler. With a Fingerprint that
// does not read the body, the handler's read fails and its answer (a 400
// here, which is not stored) decides.
func TestClientGoneMidBodyClaimsNothing(t *testing.T) {
	for _, readsBody := range []bool{true, false} {
		store := memory.New(nil)
		var runs atomic.Int64
		answered := make(chan reply, 1)
		cfg := Config{Scope: func(*http.Request) (string, error) { return "u", nil }}
		if !readsBody {
			cfg.Fingerprint = func(*http.Request) (once.Fingerprint, error) { return once.Fingerprint("headers"), nil }
		}
		m, err := New(once.New(store), cfg)
		require.NoError(t, err)
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			if _, err := io.ReadAll(r.Body); err != nil {
				http.Error(w, "unreadable body", http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if r.Header.Get("X-Cut") != "" {
				answered <- reply{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
			}
			for name, v := range rec.Header() {
				w.Header()[name] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		}))
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		_, err = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Cut: 1\r\nIdempotency-Key: k\r\nContent-Length: 1000\r\n\r\n0123456789")
		require.NoError(t, err)
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
		r := <-answered
		_ = conn.Close()

		assert.Equal(t, http.StatusBadRequest, r.status, "reads body %v", readsBody)
		if readsBody {
			assert.Equal(t, DefaultProblemBase+"request-body-invalid", r.problem(t).Type)
			assert.Zero(t, runs.Load(), "the handler does not run")
		}
		got, err := store.Get(context.Background(), "u", "k")
		found := got.State != 0
		require.NoError(t, err)
		assert.False(t, found, "reads body %v: nothing claimed or stored", readsBody)

		retry := call(t, srv, "POST", "/", "", "k", "0123456789")
		assert.Equal(t, http.StatusCreated, retry.status, "reads body %v: the retry runs the handler", readsBody)
		srv.Close()
	}
}
