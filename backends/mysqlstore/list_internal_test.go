package mysqlstore

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseListCursor(t *testing.T) {
	p := backends.ListParams{Scope: "s", KeyPrefix: "k"}
	codec := p.Cursors()
	start, err := parseListCursor("", codec)
	require.NoError(t, err)
	require.Equal(t, listCursor{expiresUS: minCursorUS}, start)
	for _, c := range []listCursor{
		{state: backends.StateHeld, expiresUS: minCursorUS},
		{state: backends.StatePending, expiresUS: maxCursorUS, scope: "s", key: "k.é"},
		{state: backends.StateHeld, expiresUS: 0, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("k", backends.MaxKeyLen)},
	} {
		got, err := parseListCursor(c.encode(codec), codec)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c, got)
	}
	// Fields this store never writes, with a valid check: an expiry
	// outside DATETIME's range, a non-canonical one, another state, a
	// scope or key no record can have; and the format before the shared
	// codec.
	span := strconv.FormatUint(maxCursorUS-minCursorUS, 10)
	for _, s := range []string{
		codec.Encode("held", span+"0", "", ""), codec.Encode("held", "-1", "", ""), codec.Encode("held", "01", "", ""),
		codec.Encode("held", "18446744073709551615", "", ""), codec.Encode("held", "", "", ""),
		codec.Encode("completed", "0", "", ""), codec.Encode("3", "0", "", ""),
		codec.Encode("held", "0", "s", ""), codec.Encode("held", "0", "s\x00", "k"), codec.Encode("held", "0", "s", "k\xff"),
		codec.Encode("held", "0", "s"), "1.0.73.6b", "3.-30610224000000000..",
	} {
		_, err := parseListCursor(s, codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
	pending := backends.ListParams{State: backends.StatePending}.Cursors()
	_, err = parseListCursor(listCursor{state: backends.StateHeld, expiresUS: minCursorUS}.encode(pending), pending)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "a pending walk's cursor does not walk the held records")
	got, err := parseListCursor(codec.Encode("held", span, "", ""), codec)
	require.NoError(t, err)
	require.Equal(t, int64(maxCursorUS), got.expiresUS, "the end of DATETIME's range")
}

// TestListCursorAtTheEndsOfDatetime: the server takes the cursor expiries
// at both ends of the accepted range (DATETIME's), for either state.
func TestListCursorAtTheEndsOfDatetime(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	for _, st := range []backends.State{backends.StatePending, backends.StateHeld} {
		for _, us := range []int64{minCursorUS, maxCursorUS} {
			p := backends.ListParams{State: st, Scope: "no-such-scope"}
			p.Cursor = listCursor{state: st, expiresUS: us, scope: "no-such-scope", key: "k"}.encode(p.Cursors())
			page, err := s.List(context.Background(), p)
			require.NoError(t, err, "state %v, expiry %d", st, us)
			require.Empty(t, page.Records)
			require.Empty(t, page.Next)
		}
	}
}
