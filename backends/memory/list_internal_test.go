package memory

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseCursor(t *testing.T) {
	codec := backends.ListParams{State: backends.StatePending, Scope: "s", KeyPrefix: "k"}.Cursors()
	for _, c := range []cursor{
		{},
		{shard: shardCount - 1},
		{shard: 3, scope: "s", key: "k.é"},
		{shard: 0, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("k", backends.MaxKeyLen)},
	} {
		got, err := parseCursor(c.encode(codec), codec)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c, got)
	}
	// Fields a store of this version never writes, with a valid check:
	// refused, never used.
	for _, f := range [][]string{
		{"32", "", ""}, {"-1", "", ""}, {"01", "", ""}, {"x", "", ""}, {"", "", ""},
		{"1", "s", ""}, {"1", "", "k"}, {"1", "s\x00", "k"}, {"1", "s", "k\xff"},
	} {
		_, err := parseCursor(codec.Encode(f...), codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", f)
	}
	_, err := parseCursor(codec.Encode("1", "s"), codec)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "two fields")
	for _, s := range []string{"0", "31", "3.7361.6b", backends.ListParams{}.Cursors().Encode("1", "", "")} {
		_, err := parseCursor(s, codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
	start, err := parseCursor("", codec)
	require.NoError(t, err)
	require.Equal(t, cursor{}, start)
}
