package faults

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/oncehttp"
)

// countingStore counts the calls that reach the store.
type countingStore struct {
	backends.Store
	calls atomic.Int64
}

func (c *countingStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	c.calls.Add(1)
	return c.Store.Claim(ctx, p)
}

// badInputs are refused by DESIGN §2 before any store call.
var badInputs = map[string]struct{ scope, key string }{
	"empty key":          {"s", ""},
	"empty scope":        {"", "k"},
	"key of 256 bytes":   {"s", strings.Repeat("k", 256)},
	"scope of 256 bytes": {strings.Repeat("s", 256), "k"},
	"invalid UTF-8 key":  {"s", "secret-\xff\xfe-key"},
	"NUL in key":         {"s", "secret\x00key"},
	"newline in key":     {"s", "secret\r\nSet-Cookie: x"},
	"DEL in scope":       {"secret\x7fscope", "k"},
	"C1 control in key":  {"s", "secret\u0085key"},
}

// oddInputs are valid and must round-trip unchanged through every store,
// without colliding.
var oddInputs = []struct{ scope, key string }{
	{"a:b", "c"}, {"a", "b:c"}, {"%7D", "}"}, {"}", "%7D"}, {"{x}", "{y}"},
	{"s", "'; DROP TABLE once_records; --"}, {"s", `redis.call("FLUSHALL")`},
	{"s", strings.Repeat("é", 127)}, {"s", strings.Repeat("k", 255)}, {"s", "日本語🙂"},
	{"s", " leading and trailing "}, {"s", "*"}, {"s", "?"},
}

// Every bad input, through Do on every store: an *InvalidInputError that
// does not echo the input, no store call, no panic. Every odd but valid
// input: stored and replayed unchanged, never colliding.
func TestSecurityInputsThroughDo(t *testing.T) {
	for name, open := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			cs := &countingStore{Store: open(t)}
			k := once.New(cs)
			ctx := context.Background()
			for what, in := range badInputs {
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s: panic %v", what, r)
						}
					}()
					_, err = once.Do(ctx, k.Scope(in.scope), in.key, nil, func(context.Context) (int, error) {
						t.Errorf("%s: fn ran", what)
						return 0, nil
					})
				}()
				var inv *once.InvalidInputError
				if !errors.As(err, &inv) {
					t.Errorf("%s: want *InvalidInputError, got %T %v", what, err, err)
					continue
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("%s: the error echoes the input: %q", what, err)
				}
				noDriverError(t, err)
			}
			_, err := once.Do(ctx, k.Scope("s"), "k", once.Fingerprint(strings.Repeat("f", 65)), func(context.Context) (int, error) { return 0, nil })
			if !errors.As(err, new(*once.InvalidInputError)) {
				t.Errorf("65-byte fingerprint: %v", err)
			}
			if n := cs.calls.Load(); n != 0 {
				t.Errorf("%d bad inputs reached the store", n)
			}
			for i, in := range oddInputs {
				want := i + 1
				got, err := once.Do(ctx, k.Scope(in.scope), in.key, nil, func(context.Context) (int, error) { return want, nil })
				if err != nil || got != want {
					t.Errorf("scope %q key %q: %d, %v", in.scope, in.key, got, err)
				}
			}
			for i, in := range oddInputs {
				got, err := once.Do(ctx, k.Scope(in.scope), in.key, nil, func(context.Context) (int, error) { return -1, nil })
				if err != nil || got != i+1 {
					t.Errorf("replay of scope %q key %q: %d, %v (a collision or a lost record)", in.scope, in.key, got, err)
				}
			}
			summary.note("security inputs through Do on %s: %d bad inputs → *InvalidInputError, 0 store calls, no echo, no panic; %d odd valid inputs round-trip without collision", name, len(badInputs)+1, len(oddInputs))
		})
	}
}

// newHTTP is the oncehttp middleware over a memory store, and a counter of
// handler runs.
func newHTTP(t testing.TB) (http.Handler, *atomic.Int64) {
	m, err := oncehttp.New(once.New(memory.New(nil)), oncehttp.Config{
		Scope: func(*http.Request) (string, error) { return "user-1", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	return m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("created"))
	})), &runs
}

// postWithKey sends POST /orders with raw Idempotency-Key values.
func postWithKey(h http.Handler, values ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":1}`))
	for _, v := range values {
		req.Header.Add(oncehttp.DefaultHeader, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Bad Idempotency-Key headers through the middleware: 400 Problem Details,
// the handler does not run, the body does not echo the header.
func TestSecurityInputsThroughHTTP(t *testing.T) {
	h, runs := newHTTP(t)
	cases := map[string][]string{
		"missing":          nil,
		"empty":            {""},
		"256 bytes":        {strings.Repeat("s", 256)},
		"control char":     {"secret\x01key"},
		"invalid UTF-8":    {"secretÿkey"},
		"non-ASCII":        {"secret-é-key"},
		"twice":            {"secret-a", "secret-b"},
		"unclosed quote":   {`"secret`},
		"script injection": {"<script>secret</script>\x00"},
	}
	for what, values := range cases {
		rec := postWithKey(h, values...)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", what, rec.Code)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Errorf("%s: Content-Type %q", what, ct)
		}
		if strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%s: the problem echoes the key: %s", what, rec.Body)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the handler ran %d times for bad keys", n)
	}
	summary.note("security inputs through oncehttp: %d bad Idempotency-Key headers → 400 application/problem+json, no echo, handler never ran", len(cases))
}
