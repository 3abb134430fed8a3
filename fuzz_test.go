package once_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stagedoor/once"
)

// FuzzDo feeds arbitrary scopes, keys and fingerprints to Do: it must never
// panic, must answer bad input with *InvalidInputError before the store,
// and must replay for good input.
func FuzzDo(f *testing.F) {
	f.Add("user-1", "7f3a9c2e-5b1d-4e8a-9f60-2c4d8e1b7a05", []byte("fp"))
	f.Add("", "k", []byte(nil))
	f.Add("s", "k\x00", []byte{1})
	f.Add("a:b", "c", make([]byte, 65))
	f.Add("s", "\xff\xfe", []byte{})
	f.Add("{s}", "*", []byte("0123456789012345678901234567890123456789012345678901234567890123"))
	k := once.New(nil)
	f.Fuzz(func(t *testing.T, scope, key string, fp []byte) {
		ctx := context.Background()
		runs := 0
		fn := func(context.Context) (string, error) { runs++; return key, nil }
		v, err := once.Do(ctx, k.Scope(scope), key, fp, fn)
		if err != nil {
			var invalid *once.InvalidInputError
			if !errors.As(err, &invalid) {
				t.Fatalf("unexpected error for (%q, %q): %v", scope, key, err)
			}
			if runs != 0 {
				t.Fatal("fn ran on invalid input")
			}
			return
		}
		again, err := once.Do(ctx, k.Scope(scope), key, fp, fn)
		if err != nil || again != v {
			t.Fatalf("replay of (%q, %q): %q %v, want %q", scope, key, again, err, v)
		}
		if runs > 1 {
			t.Fatalf("fn ran %d times", runs)
		}
	})
}
