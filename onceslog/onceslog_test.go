package onceslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/onceslog"
)

func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		lines = append(lines, m)
	}
	return lines
}

func TestLogsEventsWithHashedKeys(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	scope := once.New(nil, once.WithObserver(onceslog.Observer(logger, nil))).Scope("buyer-42")
	ctx := context.Background()
	_, _ = once.Do(ctx, scope, "order-881", nil, func(context.Context) (int, error) { return 0, errors.New("upstream 503") })

	lines := logLines(t, &buf)
	require.Len(t, lines, 3)
	assert.Equal(t, "once claimed", lines[0]["msg"])
	assert.Equal(t, "once executed", lines[1]["msg"])
	assert.Equal(t, "retryable", lines[1]["class"])
	assert.Equal(t, "upstream 503", lines[1]["fn_error"])
	assert.NotContains(t, lines[1], "error", "error is for failures of the store, never fn's")
	assert.NotContains(t, lines[1], "op", "fn's run involves no store operation")
	assert.Contains(t, lines[1], "fn_time")
	assert.Equal(t, "claim", lines[0]["op"])
	assert.Equal(t, "release", lines[2]["op"])
	assert.Equal(t, "once released", lines[2]["msg"])
	assert.Equal(t, "INFO", lines[2]["level"])
	for _, l := range lines {
		assert.Equal(t, "buyer-42", l["scope"])
		assert.Equal(t, onceslog.KeyHash("order-881"), l["key_hash"])
		assert.NotContains(t, l, "key")
	}
	assert.NotContains(t, buf.String(), "order-881", "the key never appears in clear")
}

func TestClearKeysAndLevels(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	scope := once.New(nil, once.WithObserver(onceslog.Observer(logger, &onceslog.Config{ClearKeys: true}))).Scope("s")
	ctx := context.Background()
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), func(context.Context) (int, error) { return 1, nil })
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("b"), func(context.Context) (int, error) { return 1, nil })
	lines := logLines(t, &buf)
	require.Len(t, lines, 1, "debug events are filtered at Info")
	assert.Equal(t, "once key_reused", lines[0]["msg"])
	assert.Equal(t, "k", lines[0]["key"])
}
