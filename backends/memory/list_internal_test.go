package memory

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseCursor(t *testing.T) {
	codec := backends.ListParams{State: backends.StatePending, Scope: "s", KeyPrefix: "k"}.Cursors()
	for _, c := range []cursor{
		{},
		{shard: shardCount - 1},
		{shard: 3, seq: 17},
		{shard: 0, seq: math.MaxUint64},
	} {
		got, err := parseCursor(c.encode(codec), codec)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c, got)
	}
	// Fields a store of this version never writes, with a valid check:
	// refused, never used.
	for _, f := range [][]string{
		{"32", "0"}, {"-1", "0"}, {"01", "0"}, {"x", "0"}, {"", "0"},
		{"1", ""}, {"1", "-1"}, {"1", "01"}, {"1", "18446744073709551616"}, {"1", "s"},
	} {
		_, err := parseCursor(codec.Encode(f...), codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", f)
	}
	_, err := parseCursor(codec.Encode("1", "2", "3"), codec)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "three fields")
	for _, s := range []string{"0", "31", "3.7361.6b", backends.ListParams{}.Cursors().Encode("1", "0")} {
		_, err := parseCursor(s, codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
	start, err := parseCursor("", codec)
	require.NoError(t, err)
	require.Equal(t, cursor{}, start)
}
