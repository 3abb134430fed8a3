package sqlitestore

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseCursor(t *testing.T) {
	p := backends.ListParams{Scope: "s", KeyPrefix: "k"}
	b := p.CursorBinding()
	for _, c := range []struct {
		held       bool
		scope, key string
	}{
		{held: true},
		{held: false, scope: "s", key: "k.\x00"},
		{held: true, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("\xff", backends.MaxKeyLen)},
	} {
		s := cursor(p, c.held, c.scope, c.key)
		require.LessOrEqual(t, len(s), maxCursorLen)
		held, scope, key, err := parseCursor(s, p)
		require.NoError(t, err, "%q", s)
		require.Equal(t, c.held, held)
		require.Equal(t, c.scope, scope)
		require.Equal(t, c.key, key)
	}
	long := strings.Repeat("61", backends.MaxScopeLen+1)
	for _, s := range []string{
		"p.73.6b", "h..", // the format before bindings
		".", "...", "....", b, b + ".p", b + ".p.", b + ".x..", b + ".P..", b + ".hh..",
		b + ".p.zz.00", b + ".p.0.00", b + ".p.AA.00", b + ".p.00.00.00", b + ".p." + long + ".00", b + ".p.00." + long,
		"x" + b[1:] + ".p..", b[:16] + ".p..",
		strings.Repeat(".", 1<<20), strings.Repeat("0", 1<<20),
	} {
		_, _, _, err := parseCursor(s, p)
		var le *backends.ListParamsError
		require.True(t, errors.As(err, &le), "%.60q: %v", s, err)
		require.Equal(t, "Cursor", le.Field)
	}
	for _, other := range []backends.ListParams{{State: backends.StateHeld, Scope: "s", KeyPrefix: "k"}, {Scope: "t", KeyPrefix: "k"}} {
		_, _, _, err := parseCursor(cursor(p, false, "", ""), other)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%+v", other)
	}
	pending := backends.ListParams{State: backends.StatePending}
	_, _, _, err := parseCursor(cursor(pending, true, "", ""), pending)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "a pending walk's cursor does not walk the held records")
}

// FuzzParseCursor: the parser never panics and accepts exactly what
// cursor returns.
func FuzzParseCursor(f *testing.F) {
	p := backends.ListParams{}
	f.Add(cursor(p, true, "", ""))
	f.Add(cursor(p, false, "s", "k"))
	f.Add("p.00.00")
	f.Fuzz(func(t *testing.T, s string) {
		held, scope, key, err := parseCursor(s, p)
		if err == nil && s != "" {
			require.Equal(t, s, cursor(p, held, scope, key))
		}
	})
}
