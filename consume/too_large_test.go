package consume_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// A value over the outcome cap cannot be replayed, so Value
// dead-letters it with no value, on the run that produced it and on every
// replay: no value is handed out that a redelivery could not hand out.
func TestValueOverCapIsDeadLettered(t *testing.T) {
	ctx := context.Background()
	scope := once.New(memory.New(nil), once.WithMaxOutcomeSize(256)).Scope("group")
	var runs atomic.Int32
	big := func(context.Context) (string, error) { runs.Add(1); return strings.Repeat("x", 1024), nil }

	v, d := consume.Value(ctx, scope, "m1", nil, big)
	require.Equal(t, consume.DeadLetter, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonTooLarge, d.Reason)
	require.ErrorAs(t, d.Err, new(*once.OutcomeTooLargeError))
	require.Empty(t, v, "a value without a durable record is not handed out")

	v, d = consume.Value(ctx, scope, "m1", nil, big)
	require.Equal(t, consume.DeadLetter, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonTooLarge, d.Reason)
	require.ErrorAs(t, d.Err, new(*once.OutcomeTooLargeError))
	require.Empty(t, v)
	require.EqualValues(t, 1, runs.Load(), "the replay does not run the handler")

	v, d = consume.Value(ctx, scope, "m2", nil, func(context.Context) (string, error) { return "small", nil })
	require.Equal(t, consume.ReasonDone, d.Reason)
	require.Equal(t, "small", v)
}

// A handler's own final error that wraps an *OutcomeTooLargeError (a nested Do's)
// is a final error like any other: recorded and acknowledged.
func TestValueFinalErrorWrappingTooLargeIsFinal(t *testing.T) {
	ctx := context.Background()
	scope := once.New(memory.New(nil)).Scope("group")
	handler := func(context.Context) (string, error) {
		return "ignored", once.Final(fmt.Errorf("step 1: %w", &once.OutcomeTooLargeError{Size: 10, Limit: 5}))
	}
	for _, want := range []consume.Reason{consume.ReasonDone, consume.ReasonReplayed} {
		v, d := consume.Value(ctx, scope, "m1", nil, handler)
		require.Equal(t, consume.Ack, d.Action, "decision %v", d)
		require.Equal(t, want, d.Reason)
		require.Empty(t, v, "no value with a final error")
	}
}

// In a transaction, an over-cap value is recorded as the key's final
// error and committed with the handler's effect, as DoTx commits every
// recorded answer, and dead-letters as outside a transaction: a
// redelivery replays it and dead-letters again, the handler not running
// again.
func TestValueTxOverCapCommitsAndDeadLetters(t *testing.T) {
	ctx := context.Background()
	e := newTxEnv(t)
	scope := once.New(nil, once.WithMaxOutcomeSize(256)).Scope("group")
	var runs atomic.Int32
	big := func(ctx context.Context, tx pgx.Tx) (string, error) {
		runs.Add(1)
		return strings.Repeat("x", 1024), e.effect(ctx, tx, "m1")
	}
	for range 2 {
		v, d := consume.ValueTx(ctx, scope, "m1", nil, e.begin, big)
		require.Equal(t, consume.DeadLetter, d.Action, "decision %v", d)
		require.Equal(t, consume.ReasonTooLarge, d.Reason)
		require.Empty(t, v)
	}
	require.EqualValues(t, 1, runs.Load(), "the handler ran once")
	require.Equal(t, 1, e.count("m1"), "its effect committed with the record")
}
