package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryOrderChargedOnceUnderFaults(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out), out.String())
	text := out.String()
	for _, row := range []string{
		`9b1e4d3a\s+1\s+\d+`, `5c2f7e10\s+1\s+\d+`, `e8a0b6c4\s+1\s+\d+`, `71d3f9a2\s+0\s+1\n`,
	} {
		assert.Regexp(t, regexp.MustCompile(row), text)
	}
	assert.Contains(t, text, "no response from the provider", "the dropped response was injected")
	assert.Contains(t, text, "timed out waiting for the provider", "the slow provider was injected")
	assert.Contains(t, text, "the shop restarts")
	assert.Contains(t, text, "declined (insufficient_funds) (replayed=true)", "the decline is replayed")
}
