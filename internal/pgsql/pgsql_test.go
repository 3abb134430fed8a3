package pgsql

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRender(t *testing.T) {
	s := Render(`"s"."t"`)
	for name, text := range map[string]string{
		"claim": s.Claim, "takeover": s.Takeover, "complete": s.Complete, "renew": s.Renew, "release": s.Release,
		"resolve": s.Resolve, "sweep": s.Sweep, "get": s.Get, "delete": s.Delete,
	} {
		require.NotEmpty(t, text, name)
		require.NotContains(t, text, "{table}", name)
		require.NotContains(t, text, "{notify}", name)
		require.Contains(t, text, `"s"."t"`, name)
		require.False(t, strings.Contains(text, "%["), "%s: no format verbs left", name)
	}
}

func TestChannelIsAShortLowerCaseIdentifier(t *testing.T) {
	long := `"` + strings.Repeat("s", 63) + `"."` + strings.Repeat("t", 48) + `"`
	for _, table := range []string{`"public"."once_records"`, long} {
		c := Channel(table)
		require.Len(t, c, 21)
		require.Regexp(t, `^once_[0-9a-f]{16}$`, c)
	}
	require.NotEqual(t, Channel(`"a"."b"`), Channel(`"a"."c"`))
}

func TestPayloadSeparatesScopeFromKey(t *testing.T) {
	require.Len(t, Payload("s", "k"), 16)
	require.NotEqual(t, Payload("ab", "c"), Payload("a", "bc"))
	require.Equal(t, Payload("s", "k"), Payload("s", "k"))
}

func TestWritesNotifyOnlyTheirKey(t *testing.T) {
	table := `"s"."t"`
	s := Render(table)
	for name, text := range map[string]string{"complete": s.Complete, "release": s.Release, "resolve": s.Resolve, "delete": s.Delete} {
		require.Contains(t, text, "pg_notify('"+Channel(table)+"'", name)
		require.Contains(t, text, "pg_try_advisory_xact_lock("+LockSpaceLiteral(table), name)
	}
	for name, text := range map[string]string{"claim": s.Claim, "takeover": s.Takeover, "renew": s.Renew, "sweep": s.Sweep, "get": s.Get} {
		require.NotContains(t, text, "pg_notify", name)
	}
	require.Regexp(t, `^'-?[0-9]+'::int4$`, LockSpaceLiteral(table))
}
