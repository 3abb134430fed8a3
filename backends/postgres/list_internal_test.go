package postgres

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParsePGCursor(t *testing.T) {
	p := backends.ListParams{Scope: "s", KeyPrefix: "k"}
	codec := p.Cursors()
	start, err := parsePGCursor("", codec)
	require.NoError(t, err)
	require.Equal(t, pgCursor{}, start)
	for _, c := range []pgCursor{
		{state: backends.StateHeld},
		{state: backends.StatePending, scope: "s", key: "k.é"},
		{state: backends.StateHeld, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("k", backends.MaxKeyLen)},
	} {
		got, err := parsePGCursor(c.encode(codec), codec)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c, got)
	}
	// Fields this store never writes, with a valid check: refused before
	// any statement (a NUL or invalid UTF-8 would fail on the server).
	for _, f := range [][]string{
		{"completed", "", ""}, {"", "", ""}, {"1", "", ""}, {"3", "", ""},
		{"held", "s", ""}, {"held", "", "k"}, {"held", "s\x00", "k"}, {"held", "s", "k\x00"}, {"held", "\xff", "k"}, {"held", "s", "z\xc5"},
	} {
		_, err := parsePGCursor(codec.Encode(f...), codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", f)
	}
	// The format before the shared codec, and a held cursor for a
	// pending walk.
	for _, s := range []string{"1.73.6b", p.Cursors().Encode("held", "s")} {
		_, err := parsePGCursor(s, codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
	pending := backends.ListParams{State: backends.StatePending}.Cursors()
	_, err = parsePGCursor(pgCursor{state: backends.StateHeld}.encode(pending), pending)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "a pending walk's cursor does not walk the held records")
}
