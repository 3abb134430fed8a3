package oncehttp

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/internal/testservers"
)

// logLines decodes the JSON lines of buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	return lines
}

// TestStoreFailureIsLogged: a request on a PostgreSQL store whose table was
// never migrated is answered 503, and the store's error, which says to run
// Migrate, is logged in one line: to slog.Default() with the default
// Config, to Config.Logger when one is set. Nothing was logged.
func TestStoreFailureIsLogged(t *testing.T) {
	store, err := postgres.New(testservers.Pool(t), &postgres.Config{Table: "once_t_unmigrated_" + testservers.Suffix()})
	require.NoError(t, err)
	var defaultLog, configured bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&defaultLog, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	for _, tc := range []struct {
		name   string
		logger *slog.Logger
		lines  *bytes.Buffer
	}{
		{"slog.Default", nil, &defaultLog},
		{"Config.Logger", slog.New(slog.NewJSONHandler(&configured, nil)), &configured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defaultLog.Reset()
			configured.Reset()
			m, err := New(once.New(store), Config{Scope: userScope, Logger: tc.logger})
			require.NoError(t, err)
			var ran atomic.Bool
			srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Store(true) })))
			t.Cleanup(srv.Close)
			r := send(t, srv.Client(), srv, "/orders", newKey(t), "{}")
			require.Equal(t, http.StatusServiceUnavailable, r.status)
			require.NotContains(t, r.body, "Migrate", "the store's error is never sent")
			require.False(t, ran.Load())
			lines := logLines(t, tc.lines)
			require.Len(t, lines, 1)
			require.Equal(t, "ERROR", lines[0]["level"])
			require.Equal(t, "claim", lines[0]["op"])
			require.Contains(t, lines[0]["error"], "run Store.Migrate")
			require.Contains(t, lines[0]["error"], "42P01")
			if tc.lines != &defaultLog {
				require.Empty(t, defaultLog.String(), "a configured Logger replaces slog.Default()")
			}
		})
	}
}
