package hashers

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCanonicalQuery checks the canonical query against url.ParseQuery,
// which is how net/http handlers read a query: it accepts exactly the
// queries ParseQuery accepts, and its pairs, grouped by name, are
// ParseQuery's values in their order. Two queries with the same url.Values
// thus get the same canonical pairs.
func FuzzCanonicalQuery(f *testing.F) {
	for _, s := range []string{"", "a=1&b=2", "b=2&a=1", "a=1&a=2", "q=a+b%20c", "x=%zz", "a;b", "&&a", "a=b=c", "%41=%42"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		pairs, ok := canonicalQuery(raw)
		want, err := url.ParseQuery(raw)
		require.Equal(t, err == nil, ok, "%q: %v", raw, err)
		if !ok {
			return
		}
		got := url.Values{}
		for i, p := range pairs {
			if i > 0 {
				require.LessOrEqual(t, strings.Compare(pairs[i-1][0], p[0]), 0, "sorted by name")
			}
			got[p[0]] = append(got[p[0]], p[1])
		}
		require.Equal(t, want, got, "%q", raw)
	})
}

// FuzzNormalPath checks that normalising is idempotent, keeps the path's
// meaning (the same decoded path) and keeps every escaped slash.
func FuzzNormalPath(f *testing.F) {
	for _, s := range []string{"/orders", "/%7euser", "/a%2fb", "/%zz", "/%4", "/caf%C3%A9", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		n := normalPath(p)
		require.Equal(t, n, normalPath(n), "idempotent")
		want, err := url.PathUnescape(p)
		if err == nil {
			got, err := url.PathUnescape(n)
			require.NoError(t, err)
			require.Equal(t, want, got, "same decoded path")
			require.Equal(t, strings.Count(strings.ToUpper(p), "%2F"), strings.Count(n, "%2F"), "escaped slashes kept")
		}
	})
}
