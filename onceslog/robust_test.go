package onceslog_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/onceslog"
)

// panicHandler is a handler whose Handle panics.
type panicHandler struct{ slog.Handler }

func (panicHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (panicHandler) Handle(context.Context, slog.Record) error { panic("handler bug") }

// badError's Error panics, as a nil pointer's method can.
type badError struct{}

func (*badError) Error() string { panic("Error bug") }

// A panicking handler, Level or error text drops the line and changes
// nothing of the call: fn runs once, its value is stored and replayed.
func TestPanicsDropTheLineNotTheCall(t *testing.T) {
	for name, obs := range map[string]once.Observer{
		"handler": onceslog.Observer(slog.New(panicHandler{}), nil),
		"level": onceslog.Observer(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)),
			&onceslog.Config{Level: func(once.Event) slog.Level { panic("level bug") }}),
	} {
		scope := once.New(memory.New(nil), once.WithObserver(obs)).Scope("u")
		runs := 0
		for range 2 {
			var v int
			var err error
			require.NotPanics(t, func() {
				v, err = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { runs++; return 42, nil })
			}, name)
			require.NoError(t, err, name)
			assert.Equal(t, 42, v, name)
		}
		assert.Equal(t, 1, runs, name)
	}
	var buf bytes.Buffer
	obs := onceslog.Observer(slog.New(slog.NewTextHandler(&buf, nil)), nil)
	require.NotPanics(t, func() {
		obs(context.Background(), once.Event{Kind: once.EventStoreError, Scope: "u", Key: "k", Op: "claim", Err: (*badError)(nil)})
	})
}

// DefaultLevel logs at Warn every event that carries an error, and a
// resolution at Info.
func TestDefaultLevelWarnsOfEveryError(t *testing.T) {
	boom := errors.New("lookup: provider unreachable")
	for _, tc := range []struct {
		e    once.Event
		want slog.Level
	}{
		{once.Event{Kind: once.EventReconciled, Err: boom}, slog.LevelWarn},
		{once.Event{Kind: once.EventReconciled}, slog.LevelDebug},
		{once.Event{Kind: once.EventReplayed, Op: "claim", Err: once.ErrUndecodable}, slog.LevelWarn},
		{once.Event{Kind: once.EventReplayed, Op: "claim"}, slog.LevelDebug},
		{once.Event{Kind: once.EventHeld, Op: "hold", Err: once.ErrLeaseLost}, slog.LevelWarn},
		{once.Event{Kind: once.EventHeld, Op: "hold"}, slog.LevelInfo},
		{once.Event{Kind: once.EventResolved, Op: "resolve"}, slog.LevelInfo},
		{once.Event{Kind: once.EventStoreError, Op: "claim", Err: boom}, slog.LevelWarn},
		{once.Event{Kind: once.EventExecuted, FnErr: boom}, slog.LevelDebug},
	} {
		assert.Equal(t, tc.want, onceslog.DefaultLevel(tc.e), "%v err=%v", tc.e.Kind, tc.e.Err)
	}
	var buf bytes.Buffer
	obs := onceslog.Observer(slog.New(slog.NewJSONHandler(&buf, nil)), nil) // Info
	obs(context.Background(), once.Event{Kind: once.EventReconciled, Scope: "u", Key: "k", Err: boom})
	lines := logLines(t, &buf)
	require.Len(t, lines, 1)
	assert.Equal(t, "WARN", lines[0]["level"])
	assert.Equal(t, boom.Error(), lines[0]["error"])
}

// The package documentation's ReplaceAttr redacts the scope and fn's
// error text.
func TestReplaceAttrRedactsScopesAndErrors(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case "scope":
				return slog.String("scope_hash", onceslog.KeyHash(a.Value.String()))
			case "fn_error":
				return slog.Attr{}
			}
			return a
		},
	}))
	scope := once.New(nil, once.WithObserver(onceslog.Observer(logger, nil))).Scope("buyer-42")
	_, _ = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 0, errors.New("card 4242") })
	assert.NotContains(t, buf.String(), "buyer-42")
	assert.NotContains(t, buf.String(), "card 4242")
	assert.Contains(t, buf.String(), onceslog.KeyHash("buyer-42"))
}
