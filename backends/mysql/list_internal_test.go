package mysqlstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseListCursor(t *testing.T) {
	p := backends.ListParams{Scope: "s", KeyPrefix: "k"}
	b := p.CursorBinding()
	start, err := parseListCursor("", p)
	require.NoError(t, err)
	require.Equal(t, listCursor{binding: b, expiresUS: minCursorUS}, start)
	for _, c := range []listCursor{
		{binding: b, state: backends.StateHeld, expiresUS: minCursorUS},
		{binding: b, state: backends.StatePending, expiresUS: maxCursorUS, scope: "s", key: "k.\x00"},
		{binding: b, state: backends.StateHeld, expiresUS: 0, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("\xff", backends.MaxKeyLen)},
	} {
		require.LessOrEqual(t, len(c.String()), maxListCursorLen)
		got, err := parseListCursor(c.String(), p)
		require.NoError(t, err, "%q", c.String())
		require.Equal(t, c, got)
	}
	us := func(n int64) string { return b + ".1." + strconv.FormatInt(n, 10) + ".73.6b" }
	long := strings.Repeat("61", backends.MaxScopeLen+1)
	for _, s := range []string{
		"1.0.73.6b", "3.-30610224000000000..", // the format before bindings
		".", "....", ".....", b, b + ".1", b + ".1.0", b + ".1.0.", b + ".2.0..", b + ".0.0..", b + ".13.0..",
		us(minCursorUS - 1), us(maxCursorUS + 1), us(-1 << 63), us(1<<63 - 1),
		b + ".1.99999999999999999999999.73.6b", b + ".1.-99999999999999999999999.73.6b", b + ".1.01.73.6b",
		b + ".1.+1.73.6b", b + ".1.-0.73.6b", b + ".1. 1.73.6b", b + ".1.x.73.6b", b + ".1..73.6b",
		b + ".1.0.zz.00", b + ".1.0.0.00", b + ".1.0.AA.00", b + ".1.0.00.00.00", b + ".1.0." + long + ".00", b + ".1.0.00." + long,
		"x" + b[1:] + ".1.0..", b[:16] + ".1.0..",
		strings.Repeat(".", 1<<20), strings.Repeat("9", 1<<20), b + ".1." + strings.Repeat("9", 1<<20) + "..",
	} {
		_, err := parseListCursor(s, p)
		var le *backends.ListParamsError
		require.True(t, errors.As(err, &le), "%.60q: %v", s, err)
		require.Equal(t, "Cursor", le.Field)
	}
	for _, other := range []backends.ListParams{{State: backends.StateHeld, Scope: "s", KeyPrefix: "k"}, {Scope: "t", KeyPrefix: "k"}} {
		_, err := parseListCursor(listCursor{binding: b, state: backends.StatePending}.String(), other)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%+v", other)
	}
	pending := backends.ListParams{State: backends.StatePending}
	_, err = parseListCursor(listCursor{binding: pending.CursorBinding(), state: backends.StateHeld}.String(), pending)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "a pending walk's cursor does not walk the held records")
}

// FuzzParseListCursor: the parser never panics, accepts exactly what
// String returns, and no expiry outside DATETIME's range.
func FuzzParseListCursor(f *testing.F) {
	p := backends.ListParams{}
	f.Add(listCursor{binding: p.CursorBinding(), state: backends.StateHeld, expiresUS: minCursorUS}.String())
	f.Add(listCursor{binding: p.CursorBinding(), state: backends.StatePending, expiresUS: 1, scope: "s", key: "k"}.String())
	f.Add("1.0.00.00")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseListCursor(s, p)
		if err == nil && s != "" {
			require.Equal(t, s, c.String())
			require.True(t, c.expiresUS >= minCursorUS && c.expiresUS <= maxCursorUS)
		}
	})
}

// TestListCursorAtTheEndsOfDatetime: the server takes the cursor expiries
// at both ends of the accepted range (DATETIME's), for either state.
func TestListCursorAtTheEndsOfDatetime(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	for _, st := range []backends.State{backends.StatePending, backends.StateHeld} {
		for _, us := range []int64{minCursorUS, maxCursorUS} {
			p := backends.ListParams{State: st, Scope: "no-such-scope"}
			p.Cursor = listCursor{binding: p.CursorBinding(), state: st, expiresUS: us, scope: "no-such-scope", key: "k"}.String()
			page, err := s.List(context.Background(), p)
			require.NoError(t, err, "state %v, expiry %d", st, us)
			require.Empty(t, page.Records)
			require.Empty(t, page.Next)
		}
	}
}
