package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParsePGCursor(t *testing.T) {
	p := backends.ListParams{Scope: "s", KeyPrefix: "k"}
	b := p.CursorBinding()
	start, err := parsePGCursor("", p)
	require.NoError(t, err)
	require.Equal(t, pgCursor{binding: b}, start)
	for _, c := range []pgCursor{
		{binding: b, state: backends.StateHeld},
		{binding: b, state: backends.StatePending, scope: "s", key: "k.\x00"},
		{binding: b, state: backends.StateHeld, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("\xff", backends.MaxKeyLen)},
	} {
		require.LessOrEqual(t, len(c.String()), maxPGCursorLen)
		got, err := parsePGCursor(c.String(), p)
		require.NoError(t, err, "%q", c.String())
		require.Equal(t, c, got)
	}
	long := strings.Repeat("61", backends.MaxScopeLen+1)
	for _, s := range []string{
		"1.73.6b", "3..", // the format before bindings
		".", "...", "....", b, b + ".1", b + ".1.", b + ".2..", b + ".0..", b + ".4..", b + ".13..", b + ".-1..",
		b + ".1.zz.00", b + ".1.0.00", b + ".1.AA.00", b + ".1.00.00.00", b + ".1." + long + ".00", b + ".1.00." + long,
		"x" + b[1:] + ".1..", b[:16] + ".1..",
		strings.Repeat(".", 1<<20), strings.Repeat("0", 1<<20),
	} {
		_, err := parsePGCursor(s, p)
		var le *backends.ListParamsError
		require.True(t, errors.As(err, &le), "%.60q: %v", s, err)
		require.Equal(t, "Cursor", le.Field)
	}
	// A cursor returned for p is refused with other filters, and one
	// walking the held records is refused with State=Pending even when
	// its binding says pending (it was altered).
	for _, other := range []backends.ListParams{{State: backends.StateHeld, Scope: "s", KeyPrefix: "k"}, {Scope: "t", KeyPrefix: "k"}} {
		_, err := parsePGCursor(pgCursor{binding: b, state: backends.StatePending}.String(), other)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%+v", other)
	}
	pending := backends.ListParams{State: backends.StatePending}
	_, err = parsePGCursor(pgCursor{binding: pending.CursorBinding(), state: backends.StateHeld}.String(), pending)
	require.ErrorIs(t, err, backends.ErrInvalidListParams)
}

// FuzzParsePGCursor: the parser never panics and accepts exactly what
// String returns.
func FuzzParsePGCursor(f *testing.F) {
	p := backends.ListParams{}
	f.Add(pgCursor{binding: p.CursorBinding(), state: backends.StateHeld}.String())
	f.Add(pgCursor{binding: p.CursorBinding(), state: backends.StatePending, scope: "s", key: "k"}.String())
	f.Add("1.00.00")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parsePGCursor(s, p)
		if err == nil && s != "" {
			require.Equal(t, s, c.String())
		}
	})
}
