package sqlitestore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseCursor(t *testing.T) {
	p := backends.ListParams{Scope: "s", KeyPrefix: "k"}
	codec := p.Cursors()
	for _, c := range []struct {
		held       bool
		scope, key string
	}{
		{held: true},
		{held: false, scope: "s", key: "k.é"},
		{held: true, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("k", backends.MaxKeyLen)},
	} {
		held, scope, key, err := parseCursor(cursor(codec, c.held, c.scope, c.key), codec)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c.held, held)
		require.Equal(t, c.scope, scope)
		require.Equal(t, c.key, key)
	}
	// Fields this store never writes, with a valid check, and the format
	// before the shared codec.
	for _, s := range []string{
		codec.Encode("h", "", ""), codec.Encode("p", "", ""), codec.Encode("completed", "", ""),
		codec.Encode("held", "s", ""), codec.Encode("held", "s\x00", "k"), codec.Encode("held", "s", "\xff"),
		"p.73.6b", "h..",
	} {
		_, _, _, err := parseCursor(s, codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
	pending := backends.ListParams{State: backends.StatePending}.Cursors()
	_, _, _, err := parseCursor(cursor(pending, true, "", ""), pending)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "a pending walk's cursor does not walk the held records")
}
