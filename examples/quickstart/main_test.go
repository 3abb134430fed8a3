package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuickstartChargesOnce(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, runTo(&out))
	assert.Contains(t, out.String(), "409 Conflict")
	assert.Contains(t, out.String(), "replayed=true")
	assert.Contains(t, out.String(), "422 Unprocessable Content")
	assert.Contains(t, out.String(), "payment provider calls for order 9b1e4d3a: 1\n")
}
