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

// openTestDemo opens the demo on the store of cfg until t ends.
func openTestDemo(t *testing.T, cfg exstore.Config, out *bytes.Buffer) *demo {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := openDemo(ctx, out, cfg)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		cancel()
		d.close()
	})
	return d
}

func TestEveryOrderChargedOnceUnderFaults(t *testing.T) {
	t.Parallel()
	exstoretest.EachOf(t, "payments", exstore.Kinds, func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		var out bytes.Buffer
		d := openTestDemo(t, cfg, &out)
		require.NoError(t, d.playOrders(context.Background()), out.String())
		text := out.String()
		// order, charges, provider requests, client resends: one charge per
		// paid order whatever the retries.
		for _, row := range []string{
			`9b1e4d3a\s+1\s+2\s+1\s`, `5c2f7e10\s+1\s+\d+\s+\d+\s`, `c4a19e07\s+1\s+1\s+0\s`, `e8a0b6c4\s+1\s+2\s+1\s`, `3d6f2b90\s+1\s+\d+\s+0\s`, `71d3f9a2\s+0\s+1\s+0\s`,
		} {
			assert.Regexp(t, regexp.MustCompile(row), text)
		}
		assert.Contains(t, text, "charges made: 5 for 5 paid orders (1 per order); the declined card: 0")

		// The faults were injected, the shop's oncehttp.Transport resent the
		// charge with the same key, and each retry was deduplicated by the
		// layer the output names.
		assert.Regexp(t, `the shop's client: no response from the provider \(connection closed\); it resends the charge with the same Idempotency-Key order-9b1e4d3a\n`+
			`  attempt 1: paid ch_9b1e4d3a\s+Idempotent-Replayed: false deduplicated by the provider: it replayed order-9b1e4d3a\n`, text,
			"the Transport resends the charge whose response was lost; the provider replays it")
		assert.Regexp(t, `attempt 2: paid ch_9b1e4d3a\s+Idempotent-Replayed: true  deduplicated by the shop: once.Do replayed checkout-9b1e4d3a`, text,
			"the buyer's re-send is the shop's replay")
		assert.Regexp(t, `the shop's client: no response within 300ms; it resends the charge with the same Idempotency-Key order-5c2f7e10\n`, text,
			"the slow provider was injected")
		assert.Contains(t, text, "the shop's client: 409 from the provider, the key is still being charged; it resends the charge with the same Idempotency-Key order-5c2f7e10\n",
			"the provider refuses a duplicate of the slow charge")
		assert.Regexp(t, `attempt 1: paid ch_5c2f7e10\s+Idempotent-Replayed: false deduplicated by the provider: it replayed order-5c2f7e10`, text)
		assert.Regexp(t, `attempt 2: 409 in progress, from the shop\s+Idempotent-Replayed: false deduplicated by the shop: once.Do holds checkout-c4a19e07`, text,
			"the second click is refused while the first runs")
		assert.Regexp(t, `it resends the charge with the same Idempotency-Key order-e8a0b6c4\n`+
			`  the shop shuts down \(a deploy\) before the resend: once.Do releases checkout-e8a0b6c4\n`+
			`  attempt 1: stopped: the shop shut down\s+Idempotent-Replayed: false nothing stored; the buyer retries with the same key\n`+
			`  the shop restarts\n`+
			`  attempt 2: paid ch_e8a0b6c4\s+Idempotent-Replayed: false deduplicated by the provider: it replayed order-e8a0b6c4\n`, text,
			"the restarted shop calls the provider again with the same DerivedKey and gets its replay")
		assert.Regexp(t, `attempt 2: declined \(insufficient_funds\)\s+Idempotent-Replayed: true  deduplicated by the shop`, text,
			"the decline is replayed")

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
