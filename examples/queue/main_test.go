package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
)

// TestMain turns the test binary into a worker when run re-executes it,
// so that the workers are real processes that can be killed with SIGKILL.
func TestMain(m *testing.M) {
	if s := os.Getenv(workerEnv); s != "" {
		os.Exit(workerMain(s))
	}
	os.Exit(m.Run())
}

func TestEveryOrderBilledOnceWhenWorkersDie(t *testing.T) {
	for _, kind := range []string{exstore.Redis, exstore.Postgres} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			exstoretest.Require(t, exstore.Defaults(exstore.Redis)) // the stream
			cfg := exstoretest.Config(t, kind, "queue")
			var out bytes.Buffer
			require.NoError(t, run(context.Background(), &out, cfg), out.String())
			text := out.String()
			t.Log("\n" + text)
			wants := []string{
				"claimed, working, nothing billed yet", "billed and recorded, XACK not sent",
				"kill -9 worker-1", "kill -9 worker-2",
				"dead-lettered (invalid key); acked", "dead-letter stream: 1 entry",
				"every order billed exactly once",
			}
			if kind == exstore.Redis {
				// The dead worker's claim is in the store until its lease ends.
				wants = append(wants, "took over the dead worker's claim after its lease, billed; acked")
			} else {
				// The dead worker's claim and bill were never committed.
				wants = append(wants, "billed in the transaction, not committed", "kill -9 worker-3")
			}
			for _, want := range wants {
				assert.Contains(t, text, want)
			}
			assert.Regexp(t, `reclaimed order-\d+ \(\S+\): replayed \(billed by worker-2\)`, text,
				"the entry acknowledged by nobody is replayed, not billed again")
			assert.Equal(t, 10, strings.Count(text, ": 1\n"), "one bill per order")
		})
	}
}

func TestMemoryStoreRefused(t *testing.T) {
	exstoretest.Require(t, exstore.Defaults(exstore.Redis))
	cfg := exstore.Defaults(exstore.Memory)
	cfg.Name, cfg.Drop = exstore.Unique("queue"), true
	err := run(context.Background(), &bytes.Buffer{}, cfg)
	assert.ErrorContains(t, err, "share nothing in memory")
}
