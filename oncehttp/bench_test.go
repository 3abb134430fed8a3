package oncehttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stagedoor/once"
)

const benchBody = `{"hold_ids": [88211, 88212], "payment_method": "pm_4Yc"}`

func benchHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/orders/9b1e4d3a")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"9b1e4d3a","status":"placed"}`))
	})
}

var benchURL = &url.URL{Path: "/orders"}

// benchRequest builds the request by hand: httptest.NewRequest parses a
// request text and would dominate the figures.
func benchRequest(key string) *http.Request {
	r := &http.Request{
		Method: "POST", URL: benchURL, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Idempotency-Key": {key}, "X-User": {"buyer"}},
		Body:          io.NopCloser(strings.NewReader(benchBody)),
		ContentLength: int64(len(benchBody)),
	}
	return r.WithContext(context.Background())
}

func benchServe(b *testing.B, h http.Handler, key func(i int) string) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, benchRequest(key(i)))
		if w.Code != http.StatusCreated {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkMiddleware measures the middleware against the bare handler, in
// process, over the memory store. Request and recorder construction are
// in every variant.
func BenchmarkMiddleware(b *testing.B) {
	m, err := New(once.New(nil), Config{Scope: userScope})
	if err != nil {
		b.Fatal(err)
	}
	guarded := m.Handler(benchHandler())
	b.Run("bare", func(b *testing.B) {
		benchServe(b, benchHandler(), func(int) string { return "k" })
	})
	b.Run("first", func(b *testing.B) {
		prefix := strconv.Itoa(b.N) + "-"
		benchServe(b, guarded, func(i int) string { return prefix + strconv.Itoa(i) })
	})
	b.Run("replay", func(b *testing.B) {
		benchServe(b, guarded, func(int) string { return "replayed-key" })
	})
}
