package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
)

func TestEveryOrderChargedOnceUnderFaults(t *testing.T) {
	exstoretest.Each(t, "payments", func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), &out, cfg), out.String())
		text := out.String()
		for _, row := range []string{
			`9b1e4d3a\s+1\s+\d+`, `5c2f7e10\s+1\s+\d+`, `e8a0b6c4\s+1\s+\d+`, `3d6f2b90\s+1\s+\d+`, `71d3f9a2\s+0\s+1\n`,
		} {
			assert.Regexp(t, regexp.MustCompile(row), text)
		}
		assert.Contains(t, text, "no response from the provider", "the dropped response was injected")
		assert.Contains(t, text, "timed out waiting for the provider", "the slow provider was injected")
		assert.Contains(t, text, "the shop restarts\n")
		assert.Contains(t, text, "declined (insufficient_funds) (replayed=true)", "the decline is replayed")

		afterRestart := regexp.MustCompile(`the browser retries\n  attempt 2: paid, charge ch_3d6f2b90 \(replayed=(\w+)\)`).FindStringSubmatch(text)
		require.NotNil(t, afterRestart, text)
		if cfg.Durable() {
			assert.Equal(t, "true", afterRestart[1], "a restarted shop over a durable store keeps the buyer's key")
			assert.Regexp(t, `3d6f2b90\s+1\s+1\n`, text, "the replay does not call the provider")
		} else {
			assert.Equal(t, "false", afterRestart[1], "a restarted shop over memory forgot the key")
			assert.Regexp(t, `3d6f2b90\s+1\s+2\n`, text, "the provider deduplicates the second call")
		}
	})
}
