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
		require.Contains(t, text, `"s"."t"`, name)
		require.False(t, strings.Contains(text, "%["), "%s: no format verbs left", name)
	}
}
