package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/examples/internal/exstoretest"
)

func TestOneRunPerJobAndDate(t *testing.T) {
	exstoretest.Each(t, "cron", func(t *testing.T, cfg exstore.Config) {
		t.Parallel()
		var out bytes.Buffer
		require.NoError(t, run(context.Background(), &out, 8, cfg), out.String())
		check(t, out.String())
	})
}

func check(t *testing.T, text string) {
	assert.Equal(t, 2, strings.Count(text, "ran the job for"), "one run per date")
	assert.Contains(t, text, "2026-11-29: 1\n")
	assert.Contains(t, text, "2026-11-30: 1\n")
	assert.Equal(t, 2, strings.Count(text, "instance-late: already ran on"), "a late instance replays the summary")
	skipped := strings.Count(text, "already running elsewhere") + strings.Count(text, "already ran on")
	assert.Equal(t, 2*7+2, skipped, "the 7 other instances of each night and the late ones skip")
}
