package backends_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// requireBadCursor fails unless err is a *backends.ListParamsError about
// the Cursor field.
func requireBadCursor(t *testing.T, err error, msgAndArgs ...any) *backends.ListParamsError {
	t.Helper()
	var le *backends.ListParamsError
	require.True(t, errors.As(err, &le), append([]any{"want a *ListParamsError, got %v: "}, err, msgAndArgs)...)
	require.Equal(t, "Cursor", le.Field, msgAndArgs...)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, msgAndArgs...)
	return le
}

func TestCursorRoundTrip(t *testing.T) {
	p := backends.ListParams{State: backends.StateHeld, Scope: "ab", KeyPrefix: "c"}
	codec := p.Cursors()
	shape := regexp.MustCompile(`^[0-9a-f]{17}(\.([0-9a-f]{2})*)*\.[0-9a-f]{16}$`)
	for _, fields := range [][]string{
		{},
		{""},
		{"", ""},
		{"held", "s", "k.\x00"},
		{strings.Repeat("\xff", backends.MaxKeyLen), ".", "..", " \"'"},
	} {
		c := codec.Encode(fields...)
		require.Regexp(t, shape, c)
		got, err := codec.Decode(c, len(fields))
		require.NoError(t, err, "%q", c)
		require.Equal(t, fields, got)
		for _, n := range []int{len(fields) - 1, len(fields) + 1, -1} {
			_, err := codec.Decode(c, n)
			requireBadCursor(t, err, "%q with %d fields", c, n)
		}
	}
	got, err := codec.Decode("", 3)
	require.NoError(t, err, "the start of a walk")
	require.Nil(t, got)

	same := p
	same.OlderThan, same.Limit, same.Cursor = time.Hour, 7, "x"
	got, err = same.Cursors().Decode(codec.Encode("a", "b"), 2)
	require.NoError(t, err, "OlderThan, Limit and Cursor are not bound")
	require.Equal(t, []string{"a", "b"}, got)
}

// TestCursorRandomized: random fields for random filters round-trip, and
// every cut and every one-byte change of their cursor is refused.
func TestCursorRandomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 1))
	word := func() string {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = "ab.\x00\xff 9"[r.IntN(7)]
		}
		return string(b)
	}
	for range 300 {
		p := backends.ListParams{State: backends.State(r.IntN(4)), Scope: word(), KeyPrefix: word()}
		fields := make([]string, r.IntN(6))
		for i := range fields {
			fields[i] = word()
		}
		codec := p.Cursors()
		c := codec.Encode(fields...)
		got, err := codec.Decode(c, len(fields))
		require.NoError(t, err, "seed %d: %q", seed, c)
		require.Equal(t, fields, got, "seed %d", seed)
		for cut := 1; cut < len(c); cut++ {
			_, err := codec.Decode(c[:cut], len(fields))
			requireBadCursor(t, err, "seed %d: %q cut at %d", seed, c, cut)
			_, err = codec.Decode(c[cut:], len(fields))
			requireBadCursor(t, err, "seed %d: %q from %d", seed, c, cut)
		}
		for range 20 {
			b := []byte(c)
			i := r.IntN(len(b))
			b[i] ^= byte(1 + r.IntN(255))
			_, err := codec.Decode(string(b), len(fields))
			requireBadCursor(t, err, "seed %d: %q changed at %d", seed, b, i)
		}
	}
}

func TestCursorIsBoundToItsFilters(t *testing.T) {
	base := backends.ListParams{State: backends.StateHeld, Scope: "ab", KeyPrefix: "c"}
	c := base.Cursors().Encode("x")
	for _, other := range []backends.ListParams{
		{State: 0, Scope: "ab", KeyPrefix: "c"},
		{State: backends.StatePending, Scope: "ab", KeyPrefix: "c"},
		{State: backends.StateHeld, Scope: "a", KeyPrefix: "bc"},
		{State: backends.StateHeld, Scope: "abc", KeyPrefix: ""},
		{State: backends.StateHeld, Scope: "", KeyPrefix: "abc"},
		{State: backends.StateHeld, Scope: "ab", KeyPrefix: ""},
		{State: backends.StateHeld, Scope: "ab", KeyPrefix: "d"},
	} {
		_, err := other.Cursors().Decode(c, 1)
		le := requireBadCursor(t, err, "%+v", other)
		if other.State != base.State {
			require.Contains(t, le.Reason, "State")
		} else {
			require.Contains(t, le.Reason, "Scope or KeyPrefix")
		}
		require.NotEqual(t, c, other.Cursors().Encode("x"))
	}
	require.Equal(t, "once: list: invalid Cursor: not a cursor this store returned", backends.BadCursor().Error())
}

func TestCursorRefusesGarbage(t *testing.T) {
	codec := backends.ListParams{}.Cursors()
	good := codec.Encode("ab", "c")
	body := good[:len(good)-17]
	for _, s := range []string{
		".", "..", "...", "0", "-1", "1.", "3.", "h.", "p.", "not a cursor \x00", " ", "\"",
		body, body + ".", good + ".", " " + good, good + " ", strings.ToUpper(good),
		good[:len(good)-16] + strings.Repeat("0", 16),
		strings.Repeat(".", 1<<20), strings.Repeat("0", 1<<20), strings.Repeat("ff", backends.MaxCursorLen),
		// The formats before the codec (memory, PostgreSQL, SQLite,
		// MySQL, Redis).
		"00000000000000000.3", "10000000000000000.1.73.6b", "00000000000000000.h.73.6b",
		"30000000000000000.3.-30610224000000000..", `00000000000000000 "a" 1 0 0 ""`,
	} {
		_, err := codec.Decode(s, 2)
		requireBadCursor(t, err, "%.60q", s)
	}
	// A cursor of uppercase hex, with its check made again: not
	// canonical.
	upper := body[:18] + "AB" + body[20:]
	_, err := codec.Decode(upper+"."+checkOf(t, codec, upper), 2)
	requireBadCursor(t, err, "%q", upper)
}

// checkOf forges the check of body (FNV-1a 64 of it, as Encode writes),
// after making sure it is the check of codec's cursors.
func checkOf(t *testing.T, codec backends.CursorCodec, body string) string {
	t.Helper()
	sum := func(s string) string {
		h := fnv.New64a()
		_, _ = h.Write([]byte(s))
		return fmt.Sprintf("%016x", h.Sum64())
	}
	e := codec.Encode("a")
	require.Equal(t, e[len(e)-16:], sum(e[:len(e)-17]))
	return sum(body)
}

func TestCursorState(t *testing.T) {
	for _, c := range []struct {
		filter backends.State
		field  string
		want   backends.State
	}{
		{0, "pending", backends.StatePending},
		{0, "held", backends.StateHeld},
		{backends.StatePending, "pending", backends.StatePending},
		{backends.StateHeld, "held", backends.StateHeld},
	} {
		got, err := backends.ListParams{State: c.filter}.Cursors().State(c.field)
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
	for _, c := range []struct {
		filter backends.State
		field  string
	}{
		{0, "completed"}, {0, ""}, {0, "1"}, {0, "Held"}, {0, "unknown"},
		{backends.StatePending, "held"}, {backends.StateHeld, "pending"},
	} {
		_, err := backends.ListParams{State: c.filter}.Cursors().State(c.field)
		requireBadCursor(t, err, "%+v", c)
	}
}

func TestCursorUint(t *testing.T) {
	for _, c := range []struct {
		field string
		limit uint64
		want  uint64
	}{
		{"0", 0, 0}, {"7", 7, 7}, {"18446744073709551615", 1<<64 - 1, 1<<64 - 1},
	} {
		got, err := backends.CursorUint(c.field, c.limit)
		require.NoError(t, err, "%q", c.field)
		require.Equal(t, c.want, got)
	}
	for _, s := range []string{"", "8", "-1", "+1", "01", " 1", "1 ", "0x1", "18446744073709551616", strings.Repeat("9", 1000)} {
		_, err := backends.CursorUint(s, 7)
		requireBadCursor(t, err, "%q", s)
	}
}

func TestCheckCursorRecord(t *testing.T) {
	for _, c := range [][2]string{{"", ""}, {"s", "k"}, {strings.Repeat("s", backends.MaxScopeLen), strings.Repeat("é", backends.MaxKeyLen/2)}} {
		require.NoError(t, backends.CheckCursorRecord(c[0], c[1]), "%q", c)
	}
	for _, c := range [][2]string{
		{"", "k"}, {"s", ""}, {"s\x00", "k"}, {"s", "k\x00"}, {"\xff", "k"}, {"s", "z\xc5"}, {"s", "\x7f"},
		{strings.Repeat("s", backends.MaxScopeLen+1), "k"}, {"s", strings.Repeat("k", backends.MaxKeyLen+1)},
	} {
		requireBadCursor(t, backends.CheckCursorRecord(c[0], c[1]), "%q", c)
	}
}

// FuzzCursorDecode: Decode never panics, refuses only with a
// *ListParamsError, and accepts exactly what Encode returns.
func FuzzCursorDecode(f *testing.F) {
	p := backends.ListParams{State: backends.StatePending, Scope: "s"}
	codec := p.Cursors()
	f.Add(codec.Encode("pending", "s", "k"), 3)
	f.Add(codec.Encode(), 0)
	f.Add(codec.Encode("", "", ""), 3)
	f.Add("00000000000000000.00.00", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 8
		fields, err := codec.Decode(s, n)
		if err != nil {
			requireBadCursor(t, err, "%q", s)
			return
		}
		if s != "" {
			require.Len(t, fields, n)
			require.Equal(t, s, codec.Encode(fields...))
		}
	})
}
