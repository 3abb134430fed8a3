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
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/onceslog"
)

// checkpointFails is the memory store whose Checkpoint reports a lost
// claim (err nil) or fails with err.
type checkpointFails struct {
	backends.Store
	err error
}

func (c checkpointFails) Checkpoint(context.Context, backends.CheckpointParams) (bool, error) {
	return false, c.err
}

// linesNamed returns the log lines whose message is msg.
func linesNamed(lines []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// A healthy step logs at Debug, with its name; a replayed one too.
func TestStepsLogAtDebug(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	scope := once.New(memory.New(nil), once.WithObserver(onceslog.Observer(logger, nil))).Scope("s")
	ctx := context.Background()
	retry := errors.New("upstream 503")
	fn := func(ctx context.Context) (int, error) {
		v, err := once.Step(ctx, "charge", func(context.Context) (int, error) { return 7, nil })
		if err != nil {
			return 0, err
		}
		return v, retry
	}
	_, err := once.Do(ctx, scope, "k", nil, fn)
	require.ErrorIs(t, err, retry)
	_, err = once.Do(ctx, scope, "k", nil, fn)
	require.ErrorIs(t, err, retry)

	lines := logLines(t, &buf)
	steps := linesNamed(lines, "once step")
	require.Len(t, steps, 1, "the step ran once: %v", lines)
	assert.Equal(t, "DEBUG", steps[0]["level"])
	assert.Equal(t, "charge", steps[0]["step"])
	assert.Equal(t, "checkpoint", steps[0]["op"])
	assert.Contains(t, steps[0], "fn_time")
	assert.NotContains(t, steps[0], "fn_error")
	replayed := linesNamed(lines, "once step_replayed")
	require.Len(t, replayed, 1, "%v", lines)
	assert.Equal(t, "DEBUG", replayed[0]["level"])
	assert.Equal(t, "charge", replayed[0]["step"])
}

// At the default level (Info), what an operator must see of steps is
// logged at Warn: a checkpoint no step used, an at-most-once step found
// interrupted, a checkpoint that lost the claim or failed; nothing of a
// healthy step is.
func TestStepTroubleIsWarned(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	store := memory.New(nil)
	scope := once.New(store, once.WithObserver(onceslog.Observer(logger, nil))).Scope("s")
	ctx := context.Background()
	retry := errors.New("upstream 503")

	// A checkpoint that a later execution has no step for.
	_, err := once.Do(ctx, scope, "renamed", nil, func(ctx context.Context) (int, error) {
		_, err := once.Step(ctx, "old", func(context.Context) (int, error) { return 1, nil })
		return 0, errors.Join(err, retry)
	})
	require.ErrorIs(t, err, retry)
	_, err = once.Do(ctx, scope, "renamed", nil, func(ctx context.Context) (int, error) {
		return once.Step(ctx, "new", func(context.Context) (int, error) { return 2, nil })
	})
	require.NoError(t, err)

	// An at-most-once step whose execution stopped inside it.
	require.Panics(t, func() {
		_, _ = once.Do(ctx, scope, "interrupted", nil, func(ctx context.Context) (int, error) {
			return once.StepAtMostOnce(ctx, "ship", func(context.Context) (int, error) { panic("crash") })
		})
	})
	_, err = once.Do(ctx, scope, "interrupted", nil, func(ctx context.Context) (int, error) {
		return once.StepAtMostOnce(ctx, "ship", func(context.Context) (int, error) { return 3, nil })
	})
	require.ErrorIs(t, err, once.ErrStepInterrupted)
	interrupted := err // marked Hold, which keeps its text

	// Checkpoints that lost the claim, or failed.
	boom := errors.New("store down")
	for _, s := range []backends.Store{checkpointFails{Store: store}, checkpointFails{Store: store, err: boom}} {
		scope := once.New(s, once.WithObserver(onceslog.Observer(logger, nil))).Scope("s")
		_, err = once.Do(ctx, scope, "lost", nil, func(ctx context.Context) (int, error) {
			return once.Step(ctx, "charge", func(context.Context) (int, error) { return 4, nil })
		})
		require.Error(t, err)
	}

	lines := logLines(t, &buf)
	assert.Empty(t, linesNamed(lines, "once step_replayed"))
	unmatched := linesNamed(lines, "once step_unmatched")
	require.Len(t, unmatched, 1, "%v", lines)
	assert.Equal(t, "WARN", unmatched[0]["level"])
	assert.Equal(t, "old", unmatched[0]["step"])

	steps := linesNamed(lines, "once step")
	require.Len(t, steps, 1, "only the interrupted step: %v", lines)
	assert.Equal(t, "WARN", steps[0]["level"])
	assert.Equal(t, "ship", steps[0]["step"])
	assert.Equal(t, once.ClassHold.String(), steps[0]["class"])
	assert.Equal(t, interrupted.Error(), steps[0]["fn_error"])

	lost := linesNamed(lines, "once lease_lost")
	require.NotEmpty(t, lost, "%v", lines)
	assert.Equal(t, "WARN", lost[0]["level"])
	assert.Equal(t, "checkpoint", lost[0]["op"])
	assert.Equal(t, "charge", lost[0]["step"])
	var failed map[string]any
	for _, l := range linesNamed(lines, "once store_error") {
		if l["op"] == "checkpoint" {
			failed = l
		}
	}
	require.NotNil(t, failed, "%v", lines)
	assert.Equal(t, "WARN", failed["level"])
	assert.Equal(t, "charge", failed["step"])
	assert.Equal(t, boom.Error(), failed["error"])
}

func TestDefaultLevelOfStepEvents(t *testing.T) {
	for _, tc := range []struct {
		e    once.Event
		want slog.Level
	}{
		{once.Event{Kind: once.EventStep, Step: "a", Op: "checkpoint"}, slog.LevelDebug},
		{once.Event{Kind: once.EventStep, Step: "a", Class: once.ClassRetry, FnErr: errors.New("503")}, slog.LevelDebug},
		{once.Event{Kind: once.EventStep, Step: "a", Class: once.ClassHold, FnErr: once.ErrStepInterrupted}, slog.LevelWarn},
		{once.Event{Kind: once.EventStepReplayed, Step: "a"}, slog.LevelDebug},
		{once.Event{Kind: once.EventStepReplayed, Step: "a", Err: once.ErrUndecodable}, slog.LevelWarn},
		{once.Event{Kind: once.EventStepUnmatched, Step: "a"}, slog.LevelWarn},
		{once.Event{Kind: once.EventLeaseLost, Op: "checkpoint", Step: "a", Err: once.ErrLeaseLost}, slog.LevelWarn},
		{once.Event{Kind: once.EventStoreError, Op: "checkpoint", Step: "a", Err: errors.New("down")}, slog.LevelWarn},
	} {
		assert.Equal(t, tc.want, onceslog.DefaultLevel(tc.e), "%v", tc.e)
	}
}
