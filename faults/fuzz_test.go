package faults

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// FuzzDoKey: any scope and key through Do either fail validation with an
// *InvalidInputError that does not echo them, or store and replay the
// value; never a panic, never another error.
func FuzzDoKey(f *testing.F) {
	for _, in := range badInputs {
		f.Add(in.scope, in.key)
	}
	for _, in := range oddInputs {
		f.Add(in.scope, in.key)
	}
	f.Fuzz(func(t *testing.T, scope, key string) {
		k := once.New(memory.New(nil)) // fresh: a key seen by an earlier input would replay
		ctx := context.Background()
		runs := 0
		fn := func(context.Context) (string, error) { runs++; return "v:" + key, nil }
		v, err := once.Do(ctx, k.Scope(scope), key, nil, fn)
		valid := once.ValidateKey(key) == nil && once.ValidateKey(scope) == nil
		if err != nil {
			var inv *once.InvalidInputError
			if !errors.As(err, &inv) {
				t.Fatalf("scope %q key %q: %T %v", scope, key, err, err)
			}
			if valid {
				t.Fatalf("valid scope %q key %q refused: %v", scope, key, err)
			}
			for _, s := range []string{scope, key} {
				if len(s) >= 12 && strings.Contains(err.Error(), s) {
					t.Fatalf("the error echoes the input %q: %v", s, err)
				}
			}
			return
		}
		again, err := once.Do(ctx, k.Scope(scope), key, nil, fn)
		if err != nil || again != v || v != "v:"+key || runs != 1 {
			t.Fatalf("scope %q key %q: %q then %q (%v), fn ran %d times", scope, key, v, again, err, runs)
		}
	})
}

// FuzzHTTPKeyHeader: any Idempotency-Key header value gets 201 from the
// handler (then a replay) or 400 Problem Details; never a 5xx or a panic,
// never an echo of the key in a problem.
func FuzzHTTPKeyHeader(f *testing.F) {
	for _, s := range []string{"", "k", `"quoted"`, strings.Repeat("a", 256), "a\x00b", "\xff", "é", "a b", `"a\"b"`, "a,b", "(;)"} {
		f.Add(s)
	}
	h, _ := newHTTP(f)
	f.Fuzz(func(t *testing.T, value string) {
		rec := postWithKey(h, value)
		switch rec.Code {
		case http.StatusCreated:
			again := postWithKey(h, value)
			if again.Code != http.StatusCreated || again.Header().Get("Idempotent-Replayed") != "true" {
				t.Fatalf("key %q: replay %d %v", value, again.Code, again.Header())
			}
		case http.StatusBadRequest:
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/problem+json") {
				t.Fatalf("key %q: 400 without Problem Details", value)
			}
			if len(value) >= 12 && strings.Contains(rec.Body.String(), value) {
				t.Fatalf("key %q echoed: %s", value, rec.Body)
			}
		default:
			t.Fatalf("key %q: status %d: %s", value, rec.Code, rec.Body)
		}
	})
}
