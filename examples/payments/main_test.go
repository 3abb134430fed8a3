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
			`9b1e4d3a\s+1\s+\d+`, `5c2f7e10\s+1\s+\d+`, `c4a19e07\s+1\s+1\s`, `e8a0b6c4\s+1\s+\d+`, `3d6f2b90\s+1\s+\d+`, `71d3f9a2\s+0\s+1\s`,
		} {
			assert.Regexp(t, regexp.MustCompile(row), text)
		}
		assert.Contains(t, text, "charges made: 5 for 5 paid orders (1 per order); the declined card: 0")

		// The faults were injected, and each retry was deduplicated by the
		// layer the output names.
		assert.Contains(t, text, "no response from the provider", "the dropped response was injected")
		assert.Contains(t, text, "timed out waiting for the provider", "the slow provider was injected")
		assert.Contains(t, text, "the shop restarts\n")
		assert.Regexp(t, `attempt 2: paid ch_9b1e4d3a\s+Idempotent-Replayed: false deduplicated by the provider: it replayed order-9b1e4d3a`, text,
			"the shop's retry after the lost response is answered by the provider's replay")
		assert.Regexp(t, `attempt 3: paid ch_9b1e4d3a\s+Idempotent-Replayed: true  deduplicated by the shop: once.Do replayed checkout-9b1e4d3a`, text,
			"the buyer's re-send is the shop's replay")
		assert.Regexp(t, `attempt 2: 409 in progress, from the shop\s+Idempotent-Replayed: false deduplicated by the shop: once.Do holds checkout-c4a19e07`, text,
			"the second click is refused while the first runs")
		assert.Regexp(t, `attempt 2: declined \(insufficient_funds\)\s+Idempotent-Replayed: true  deduplicated by the shop`, text,
			"the decline is replayed")
		assert.Regexp(t, `by the provider: order-5c2f7e10 is still being charged`, text, "the provider refuses a duplicate of the slow charge")

		afterRestart := regexp.MustCompile(`the browser retries\n  attempt 2: paid ch_3d6f2b90\s+Idempotent-Replayed: (\w+)\s+deduplicated by the (\w+)`).FindStringSubmatch(text)
		require.NotNil(t, afterRestart, text)
		if cfg.Durable() {
			assert.Equal(t, []string{"true", "shop"}, afterRestart[1:], "a restarted shop over a durable store keeps the buyer's key")
			assert.Regexp(t, `3d6f2b90\s+1\s+1\s`, text, "the replay does not call the provider")
		} else {
			assert.Equal(t, []string{"false", "provider"}, afterRestart[1:], "a restarted shop over memory forgot the key; the provider deduplicates")
			assert.Regexp(t, `3d6f2b90\s+1\s+2\s`, text, "the provider deduplicates the second call")
		}
	})
}
