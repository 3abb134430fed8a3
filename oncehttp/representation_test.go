package oncehttp

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// rawPost sends one POST with key through a client that leaves the body
// as it came (no transparent gzip decoding).
func rawPost(t *testing.T, url, key string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader("x"))
	require.NoError(t, err)
	req.Header.Set(DefaultHeader, key)
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b strings.Builder
	zw := gzip.NewWriter(&b)
	_, err := io.WriteString(zw, s)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return []byte(b.String())
}

// The stored body is the encoded bytes, so its replay carries the headers
// those bytes depend on (Content-Encoding, Content-Range, Vary) whatever
// StoreHeaders lists: a gzip body replayed without its Content-Encoding
// would be garbage labelled identity.
func TestReplayKeepsTheRepresentationHeaders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store []string
	}{
		{"default StoreHeaders", nil},
		{"StoreHeaders without them", []string{"Location"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			body := gzipped(t, `{"id":1}`)
			m, err := New(once.New(nil), Config{
				Scope:        func(*http.Request) (string, error) { return "u", nil },
				StoreHeaders: tc.store,
			})
			require.NoError(t, err)
			srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				w.Header().Set("Content-Encoding", "gzip")
				w.Header().Set("Content-Range", "bytes 0-26/27")
				w.Header().Set("Vary", "Accept-Encoding")
				w.WriteHeader(http.StatusPartialContent)
				_, _ = w.Write(body)
			})))
			defer srv.Close()
			first, b1 := rawPost(t, srv.URL, "k")
			replay, b2 := rawPost(t, srv.URL, "k")
			assert.Equal(t, "true", replay.Header.Get(ReplayedHeader))
			assert.Equal(t, body, b2, "byte for byte")
			assert.Equal(t, b1, b2)
			for _, h := range []string{"Content-Encoding", "Content-Range", "Vary"} {
				assert.Equal(t, first.Header.Get(h), replay.Header.Get(h), h)
			}
			assert.Equal(t, int64(1), runs.Load())
		})
	}
}

// An idempotency gateway: the Middleware in front of a reverse proxy to a
// backend that gzips when asked, and a plain http.Client (which asks for
// gzip and decodes it). The replay decodes to the same JSON.
func TestGatewayReplaysAGzipBackend(t *testing.T) {
	var runs atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"order":1}`)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusCreated)
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, `{"order":1}`)
		_ = zw.Close()
	}))
	defer backend.Close()
	u, err := url.Parse(backend.URL)
	require.NoError(t, err)
	m, err := New(once.New(nil), Config{Scope: func(*http.Request) (string, error) { return "u", nil }})
	require.NoError(t, err)
	gw := httptest.NewServer(m.Handler(httputil.NewSingleHostReverseProxy(u)))
	defer gw.Close()
	for i := range 2 {
		req, err := http.NewRequest("POST", gw.URL+"/orders", strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set(DefaultHeader, "g1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, `{"order":1}`, string(b), "attempt %d", i+1)
		assert.Equal(t, i == 1, Replayed(resp))
	}
	assert.Equal(t, int64(1), runs.Load())
}
