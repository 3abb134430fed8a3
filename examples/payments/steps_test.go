package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
	"github.com/stagedoor/once/internal/testparallel"
)

// TestMain turns the test binary into a shop process when the steps part
// starts one (runShopProcess re-executes the running binary), so that the
// shops are real processes that the test kills with SIGKILL.
//
// The tests wait on the demo's own timeouts and holds (see client.go)
// far more than they compute, so every one of them, a test per store of
// each story, runs at once unless -parallel says otherwise.
func TestMain(m *testing.M) {
	if job := os.Getenv(shopEnv); job != "" {
		os.Exit(shopMain(job))
	}
	testparallel.Default(3*len(exstore.Kinds) + 2)
	os.Exit(m.Run())
}

// TestStepsResumeAfterKill plays the steps part on every store (memory
// plays it on SQLite) and checks the effects of each step: the shop killed
// after the charge's checkpoint resumes without calling the provider
// again; the shop killed between the charge and its checkpoint sends the
// charge again, and the provider replays it; every order has one stock
// hold, one charge and one order row.
func TestStepsResumeAfterKill(t *testing.T) {
	t.Parallel()
	exstoretest.EachOf(t, "payments_steps", exstore.Kinds, func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		var out bytes.Buffer
		results, err := runSteps(context.Background(), &out, cfg)
		require.NoError(t, err, out.String())
		defer func() {
			if t.Failed() {
				t.Log("\n" + out.String())
			}
		}()
		require.Len(t, results, 2)
		afterCheckpoint, beforeCheckpoint := results[0], results[1]
		require.Equal(t, "2b7d4e19", afterCheckpoint.Order)
		require.Equal(t, "6a0c8f35", beforeCheckpoint.Order)

		// Killed after the charge's checkpoint: the retry replays the hold
		// and the charge, and writes the row.
		r := afterCheckpoint
		assert.Equal(t, map[string]int{"hold": 1, "charge": 1, "order": 1}, r.Runs)
		assert.Equal(t, map[string]int{"hold": 1, "charge": 1}, r.Replays)
		assert.Equal(t, 1, r.ChargeRequests, "the charge is not sent again")
		assert.Equal(t, 0, r.ProviderReplays)

		// Killed between the charge and its checkpoint: the retry sends the
		// charge again with its DerivedKey, and the provider replays it.
		r = beforeCheckpoint
		assert.Equal(t, map[string]int{"hold": 1, "charge": 2, "order": 1}, r.Runs)
		assert.Equal(t, map[string]int{"hold": 1}, r.Replays)
		assert.Equal(t, 2, r.ChargeRequests, "the charge is sent again")
		assert.Equal(t, 1, r.ProviderReplays, "and the provider replays it")

		for _, r := range results {
			assert.Equal(t, 1, r.Holds, r.Order)
			assert.Equal(t, 1, r.HoldRequests, r.Order)
			assert.Equal(t, 1, r.Charges, r.Order)
			assert.Equal(t, 1, r.Rows, r.Order)
			id := "ch_" + r.Order
			assert.Equal(t, []string{id + " recorded", id + " replayed"}, r.Answers,
				"the retry's shop records the charge, the reload's replays it")
		}

		text := out.String()
		assert.Contains(t, text, "every order: 1 stock hold, 1 charge, 1 order row")
		if cfg.Durable() {
			assert.Contains(t, text, "shop's store: "+cfg.String())
		} else {
			assert.Contains(t, text, "memory keeps nothing across processes, so this part runs on SQLite")
		}
		switch cfg.Kind {
		case exstore.Redis:
			assert.Regexp(t, `order\s+once.Step\s+1\s+0\s+1 order row \(written in the shop processes\)`, text)
		default:
			assert.Regexp(t, `order\s+once.StepTx\s+1\s+0\s+1 order row\n`, text, "the row is counted in the database")
		}
	})
}
