package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
)

func TestEachEventProcessedOnce(t *testing.T) {
	exstoretest.Each(t, "webhook", func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), &out, cfg), out.String())
		check(t, out.String())
	})
}

func check(t *testing.T, text string) {
	for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4"} {
		assert.Contains(t, text, "  "+id+": 1\n")
	}
	assert.Contains(t, text, `200 {"status":"duplicate"}`, "a duplicate is acknowledged")
	assert.Contains(t, text, "forged: 401 bad signature")
	assert.Contains(t, text, "500 processing failed; redeliver", "the failure was injected")
}
