package backends

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// referenceNameProblem is NameProblem's rule written plainly, without the
// printable-ASCII fast path.
func referenceNameProblem(s string, limit int) string {
	switch {
	case len(s) > limit:
		return "longer than " + strconv.Itoa(limit) + " bytes"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	return ""
}

// TestNameProblemMatchesItsRule: random names, mostly printable ASCII
// with some control, multi-byte, C1 control and invalid bytes at random
// places, get the answer of the plain rule.
func TestNameProblemMatchesItsRule(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	pieces := []string{"a", "Z", "-", " ", "~", "\x00", "\t", "\x1f", "\x7f", "é", "ł", "\u0085", "\u009f", "€", "😀", "\xff", "\xc5", "\xe2\x82"}
	for range 20000 {
		var b strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			if rng.IntN(4) == 0 {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			} else {
				b.WriteString(pieces[rng.IntN(5)])
			}
		}
		s, limit := b.String(), 1+rng.IntN(40)
		if got, want := NameProblem(s, limit), referenceNameProblem(s, limit); got != want {
			t.Fatalf("NameProblem(%q, %d) = %q, want %q", s, limit, got, want)
		}
	}
}

func BenchmarkNameProblem(b *testing.B) {
	for b.Loop() {
		_ = NameProblem("checkout", MaxScopeLen)
		_ = NameProblem("order-4f1c2a9e-7b3d-4e8a-9c51-2d6f0b8a7e13", MaxKeyLen)
	}
}
