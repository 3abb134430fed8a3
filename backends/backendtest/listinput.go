package backendtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The filters and cursors of backends.Lister that List refuses with a
// *backends.ListParamsError before anything reaches a server: a server's
// own error (PostgreSQL's 22021 for a NUL or invalid UTF-8) or a panic
// fails them.

func exerciseListInputs(t *testing.T, newStore NewStore) {
	run(t, newStore, "RefusesFiltersNoRecordCanHave", func(e *env) {
		l := e.lister()
		for _, bad := range []string{"a\x00", "\x00", "\xff", "z\xc5", "a\x01b", "a\x7f", strings.Repeat("s", 256)} {
			for _, c := range []struct {
				p     backends.ListParams
				field string
			}{
				{backends.ListParams{Scope: bad}, "Scope"},
				{backends.ListParams{Scope: e.scope + bad, State: backends.StateHeld}, "Scope"},
				{backends.ListParams{KeyPrefix: bad}, "KeyPrefix"},
				{backends.ListParams{Scope: e.scope, KeyPrefix: "k-" + bad, State: backends.StatePending}, "KeyPrefix"},
				{backends.ListParams{Scope: bad, Cursor: "garbage"}, "Scope"},
			} {
				_, err := l.List(e.ctx, c.p)
				requireListParamsError(e.t, err, c.field, fmt.Sprintf("%s %.40q", c.field, bad))
			}
		}
	})

	run(t, newStore, "RefusesAlteredCursors", func(e *env) {
		l := e.lister()
		e.populate("k-", 2)
		for _, p := range e.cursorsOf(backends.ListParams{Scope: e.scope, KeyPrefix: "k-"}, 3) {
			c := p.Cursor
			for cut := 1; cut < len(c); cut++ {
				for _, s := range []string{c[:cut], c[cut:]} {
					q := p
					q.Cursor = s
					_, err := l.List(e.ctx, q)
					requireListParamsError(e.t, err, "Cursor", fmt.Sprintf("a cut cursor %q", s))
				}
			}
			for i := range len(c) {
				for _, b := range []byte{0, 0xff, 0xc3, '.', '0', 'f', c[i] ^ 1} {
					if b == c[i] {
						continue
					}
					q := p
					q.Cursor = c[:i] + string(b) + c[i+1:]
					_, err := l.List(e.ctx, q)
					requireListParamsError(e.t, err, "Cursor", fmt.Sprintf("an altered cursor %q", q.Cursor))
				}
			}
		}
	})

	// A cursor forged with the shared codec (a store that does not use
	// it skips): each field in turn replaced by a value its store never
	// writes is refused with a *ListParamsError or read as a position;
	// never a server's error.
	run(t, newStore, "ForgedCursorFields", func(e *env) {
		l := e.lister()
		e.populate("k-", 2)
		forged := 0
		for _, p := range e.cursorsOf(backends.ListParams{Scope: e.scope, KeyPrefix: "k-"}, 3) {
			codec := p.Cursors()
			fields, n := []string(nil), 0
			for ; n <= 16 && fields == nil; n++ {
				fields, _ = codec.Decode(p.Cursor, n)
			}
			if fields == nil {
				continue
			}
			for i := range fields {
				for _, v := range []string{
					"", "\x00", "a\x00", "\xff", "z\xc5", "\x01", "-1", "01", "99999999999999999999999",
					"18446744073709551615", strings.Repeat("x", 300), "pending", "held", "completed", "0", "{",
				} {
					f := append([]string(nil), fields...)
					f[i] = v
					q := p
					q.Cursor = codec.Encode(f...)
					forged++
					if _, err := l.List(e.ctx, q); err != nil {
						requireListParamsError(e.t, err, "Cursor", fmt.Sprintf("field %d of %q set to %q", i, fields, v))
					}
				}
			}
		}
		if forged == 0 {
			e.t.Skip("the store's cursors are not of backends.CursorCodec")
		}
	})
}

// cursorsOf walks p one record a page and returns p with each of the
// walk's first n cursors.
func (e *env) cursorsOf(p backends.ListParams, n int) []backends.ListParams {
	e.t.Helper()
	l := e.lister()
	p.Limit = 1
	var out []backends.ListParams
	for len(out) < n {
		page, err := l.List(e.ctx, p)
		require.NoError(e.t, err)
		if page.Next == "" {
			break
		}
		p.Cursor = page.Next
		out = append(out, p)
	}
	require.NotEmpty(e.t, out, "the walk had more than one page")
	return out
}
