package redisstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseRecordKeyInvertsRecordKey(t *testing.T) {
	for _, c := range [][2]string{
		{"a:b", "c"}, {"a", "b:c"}, {"{a}", "b"}, {"{a", "}b"}, {"100%", "}"}, {"%7D", "%25"}, {"*", "[?]"},
	} {
		scope, key, ok := parseRecordKey("p:", recordKey("p:", c[0], c[1]))
		require.True(t, ok, "%q", c)
		require.Equal(t, c[0], scope)
		require.Equal(t, c[1], key)
	}
	for _, raw := range []string{"p:", "p:{", "p:{x:a:b}", "p:{9:a:b}", "p:{1:a:b", "q:{1:a:b}", "p:{1:a}b}"} {
		_, _, ok := parseRecordKey("p:", raw)
		require.False(t, ok, "%q", raw)
	}
}

func TestListCursorRoundTrip(t *testing.T) {
	for _, c := range []listCursor{{}, {addr: "127.0.0.1:7001", scan: 1 << 63, after: "once:{1:a:\" b}"}} {
		got, ok := parseListCursor(c.String())
		require.True(t, ok)
		require.Equal(t, c, got)
	}
	for _, s := range []string{"x", `"a" 1`, `"a" x ""`, `"a" 1 "" tail`} {
		_, ok := parseListCursor(s)
		require.False(t, ok, "%q", s)
	}
}

func TestListPatternEscapesGlobs(t *testing.T) {
	s := &Store{prefix: "once[1]*:"}
	require.Equal(t, `once\[1\]\*:{*`, s.listPattern(listParams("")))
	require.Equal(t, `once\[1\]\*:{3:a\?b:k*`, s.listPattern(listParamsKey("a?b", "k")))
}

func listParams(scope string) backends.ListParams { return backends.ListParams{Scope: scope} }

func listParamsKey(scope, prefix string) backends.ListParams {
	return backends.ListParams{Scope: scope, KeyPrefix: prefix}
}
