package memory

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseCursor(t *testing.T) {
	p := backends.ListParams{State: backends.StatePending, Scope: "s", KeyPrefix: "k"}
	b := p.CursorBinding()
	for _, c := range []cursor{
		{binding: b},
		{binding: b, shard: shardCount - 1},
		{binding: b, shard: 3, scope: "s", key: "k.\x00", started: true},
		{binding: b, shard: 0, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("\xff", backends.MaxKeyLen), started: true},
	} {
		require.LessOrEqual(t, len(c.String()), maxCursorLen)
		got, err := parseCursor(c.String(), p)
		require.NoError(t, err, "%q", c.String())
		require.Equal(t, c, got)
	}
	long := strings.Repeat("61", backends.MaxScopeLen+1)
	for _, s := range []string{
		"0", "31", "3.7361.6b", // the format before bindings
		".", "..", "...", b, b + ".", b + ".x", b + ".-1", b + ".32", b + ".+1", b + ".01", b + ". 1",
		b + ".99999999999999999999999", b + ".-9223372036854775808", b + ".1.", b + ".1.zz.00",
		b + ".1.0.00", b + ".1.AA.00", b + ".1.00.00.00", b + ".1." + long + ".00",
		strings.Repeat(".", 1<<20), strings.Repeat("9", 1<<20),
	} {
		_, err := parseCursor(s, p)
		var le *backends.ListParamsError
		require.True(t, errors.As(err, &le), "%.60q: %v", s, err)
		require.Equal(t, "Cursor", le.Field)
	}
	for _, other := range []backends.ListParams{{State: backends.StateHeld, Scope: "s", KeyPrefix: "k"}, {State: backends.StatePending, Scope: "s"}} {
		_, err := parseCursor(cursor{binding: b, shard: 1}.String(), other)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%+v", other)
	}
}

// FuzzParseCursor: the parser never panics and accepts exactly what
// String returns.
func FuzzParseCursor(f *testing.F) {
	p := backends.ListParams{}
	f.Add(cursor{binding: p.CursorBinding(), shard: 2}.String())
	f.Add(cursor{binding: p.CursorBinding(), shard: 2, scope: "s", key: "k", started: true}.String())
	f.Add("1.00.00")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s, p)
		if err == nil && s != "" {
			require.Equal(t, s, c.String())
		}
	})
}
