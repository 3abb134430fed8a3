package onceotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// spanEvent is a span event's name and attributes.
type spanEvent struct {
	name  string
	attrs map[attribute.Key]attribute.Value
}

func spanEvents(s sdktrace.ReadOnlySpan) []spanEvent {
	var out []spanEvent
	for _, e := range s.Events() {
		ev := spanEvent{name: e.Name, attrs: map[attribute.Key]attribute.Value{}}
		for _, a := range e.Attributes {
			ev.attrs[a.Key] = a.Value
		}
		out = append(out, ev)
	}
	return out
}

// A call's steps are span events on its span, with the step's name, its
// class and run time; a resumed call's span shows which step was replayed
// and which ran, and a checkpoint no step used. The names never reach the
// metrics, which count step events by class.
func TestStepsAreSpanEvents(t *testing.T) {
	inst, reader, spans := setup(t)
	scope := once.New(memory.New(nil), inst.Options()...).Scope("buyer-42")
	ctx := context.Background()
	unreachable := errors.New("provider unreachable")
	fn := func(fail bool) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			if _, err := once.Step(ctx, "reserve", func(context.Context) (int, error) { return 1, nil }); err != nil {
				return 0, err
			}
			return once.Step(ctx, "charge", func(context.Context) (int, error) {
				if fail {
					return 0, unreachable
				}
				return 2, nil
			})
		}
	}
	_, err := once.Do(ctx, scope, "k", nil, fn(true))
	require.ErrorIs(t, err, unreachable)
	_, err = once.Do(ctx, scope, "k", nil, fn(false))
	require.NoError(t, err)
	// A checkpoint from an older version of fn, left unused.
	_, err = once.Do(ctx, scope, "old", nil, func(ctx context.Context) (int, error) {
		_, err := once.Step(ctx, "legacy", func(context.Context) (int, error) { return 1, nil })
		return 0, errors.Join(err, unreachable)
	})
	require.ErrorIs(t, err, unreachable)
	_, err = once.Do(ctx, scope, "old", nil, func(context.Context) (int, error) { return 3, nil })
	require.NoError(t, err)

	ended := spans.Ended()
	require.Len(t, ended, 4)
	type step struct{ event, name, class string }
	steps := func(s sdktrace.ReadOnlySpan) []step {
		var out []step
		for _, e := range spanEvents(s) {
			name, ok := e.attrs["once.step"]
			if !ok {
				continue
			}
			out = append(out, step{e.name, name.AsString(), e.attrs["once.class"].AsString()})
			if e.name == "once.step" {
				assert.Contains(t, e.attrs, attribute.Key("once.step.duration_s"), "%s", e.name)
			}
		}
		return out
	}
	assert.Equal(t, []step{{"once.step", "reserve", "none"}, {"once.step", "charge", once.ClassRetry.String()}}, steps(ended[0]))
	assert.Equal(t, []step{{"once.step_replayed", "reserve", ""}, {"once.step", "charge", "none"}}, steps(ended[1]))
	assert.Equal(t, []step{{"once.step_unmatched", "legacy", ""}}, steps(ended[3]))

	counts := eventCounts(t, reader)
	assert.EqualValues(t, 4, counts["step"])
	assert.EqualValues(t, 1, counts["step_replayed"])
	assert.EqualValues(t, 1, counts["step_unmatched"])
	assert.EqualValues(t, 3, storeSamples(t, reader)["checkpoint"], "one sample per checkpoint written")
}
