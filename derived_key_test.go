package once_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

func TestDerivedKeyPlainForm(t *testing.T) {
	assert.Equal(t, "order-9b1e4d3a", once.DerivedKey("order", "9b1e4d3a"))
	assert.Equal(t, "order-9b1e4d3a-5b1d-4e8a", once.DerivedKey("order", "9b1e4d3a-5b1d-4e8a"))
	assert.Equal(t, once.DerivedKey("order", "881"), once.DerivedKey("order", "881"), "deterministic")
}

func TestDerivedKeyIsInjective(t *testing.T) {
	pairs := [][2]string{
		{"order", "a-b"}, {"order-a", "b"}, {"order", "a"}, {"orde", "r-a"},
		{"order", ""}, {"", "order"}, {"order", "A~b"}, {"order", "a b"},
		{"order", strings.Repeat("x", 249)}, {"order", strings.Repeat("x", 250)},
		{"order", strings.Repeat("x", 251)}, {"Order", "a"}, {"order", "é"},
		{"order", "-"}, {"order-", ""}, {"a", "~"}, {"~", "a"},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := once.DerivedKey(p[0], p[1])
		if prev, dup := seen[k]; dup {
			t.Fatalf("%q and %q both derive %q", prev, p, k)
		}
		seen[k] = p
	}
}

func TestDerivedKeyIsAValidKey(t *testing.T) {
	for _, in := range [][2]string{
		{"order", "9b1e4d3a"}, {"order", strings.Repeat("x", 1000)}, {strings.Repeat("n", 300), "1"},
		{"order", "\x00\xff"}, {"支付", "订单"}, {"", ""},
	} {
		k := once.DerivedKey(in[0], in[1])
		require.NoError(t, once.ValidateKey(k), "%q", in)
		assert.LessOrEqual(t, len(k), 255)
		assert.True(t, utf8.ValidString(k))
	}
}

func FuzzDerivedKey(f *testing.F) {
	f.Add("order", "9b1e4d3a", "order-9b1e", "4d3a")
	f.Add("a", "b-c", "a-b", "c")
	f.Add("", "", "x", "")
	f.Fuzz(func(t *testing.T, ns1, id1, ns2, id2 string) {
		k1, k2 := once.DerivedKey(ns1, id1), once.DerivedKey(ns2, id2)
		if err := once.ValidateKey(k1); err != nil {
			t.Fatalf("DerivedKey(%q, %q) = %q is not a valid key: %v", ns1, id1, k1, err)
		}
		if k1 == k2 && (ns1 != ns2 || id1 != id2) {
			t.Fatalf("(%q,%q) and (%q,%q) both derive %q", ns1, id1, ns2, id2, k1)
		}
	})
}
