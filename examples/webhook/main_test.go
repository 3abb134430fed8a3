package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEachEventProcessedOnce(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out), out.String())
	text := out.String()
	for _, id := range []string{"evt_1", "evt_2", "evt_3", "evt_4"} {
		assert.Contains(t, text, "  "+id+": 1\n")
	}
	assert.Contains(t, text, `200 {"status":"duplicate"}`, "a duplicate is acknowledged")
	assert.Contains(t, text, "forged: 401 bad signature")
	assert.Contains(t, text, "500 processing failed; redeliver", "the failure was injected")
}
