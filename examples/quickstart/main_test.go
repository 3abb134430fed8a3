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

func TestQuickstartChargesOnce(t *testing.T) {
	exstoretest.Each(t, "quickstart", func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), &out, cfg), out.String())
		text := out.String()
		assert.Contains(t, text, "store: "+cfg.String())
		assert.Contains(t, text, "request 2 (while 1 runs): 409 Conflict")
		assert.Contains(t, text, "request 1: 201 Created, order 9b1e4d3a, replayed=false")
		assert.Contains(t, text, "request 3 (browser retry): 201 Created, order 9b1e4d3a, replayed=true")
		assert.Contains(t, text, "422 Unprocessable Content")
		assert.Contains(t, text, "payment provider calls for order 9b1e4d3a: 1\n")
	})
}
