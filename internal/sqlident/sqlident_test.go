package sqlident

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	for name, want := range map[string]string{
		"once_recs":   "",
		"_x9":         "",
		"":            "empty",
		"9lives":      "starts with a digit",
		"a-b":         "only ASCII letters, digits and underscores are allowed",
		"é":           "only ASCII letters, digits and underscores are allowed",
		"abcdefghijk": "longer than 10 bytes",
	} {
		require.Equal(t, want, Check(name, 10), "Check(%q, 10)", name)
	}
}
