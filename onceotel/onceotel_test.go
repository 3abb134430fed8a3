package onceotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/onceotel"
)

func setup(t *testing.T) (*onceotel.Instrumentation, *sdkmetric.ManualReader, *tracetest.SpanRecorder) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	inst, err := onceotel.New(&onceotel.Config{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		ScopeClass:     func(string) string { return "user" },
	})
	require.NoError(t, err)
	return inst, reader, spans
}

func eventCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "once.events" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				ev, _ := dp.Attributes.Value(attribute.Key("once.event"))
				class, _ := dp.Attributes.Value(attribute.Key("once.scope_class"))
				assert.Equal(t, "user", class.AsString())
				_, hasKey := dp.Attributes.Value(attribute.Key("once.key"))
				assert.False(t, hasKey)
				counts[ev.AsString()] += dp.Value
			}
		}
	}
	return counts
}

func TestMetricsCountEveryOutcome(t *testing.T) {
	inst, reader, _ := setup(t)
	scope := once.New(nil, once.WithObserver(inst.Observer())).Scope("buyer-42")
	ctx := context.Background()
	ok := func(context.Context) (int, error) { return 1, nil }
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), ok)
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), ok)
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), ok)
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("b"), ok)
	_, _ = once.Do(ctx, scope, "r", nil, func(context.Context) (int, error) { return 0, errors.New("503") })

	assert.Equal(t, map[string]int64{
		"claimed": 2, "executed": 2, "recorded": 1, "replayed": 2, "key_reused": 1, "released": 1,
	}, eventCounts(t, reader))
}

func TestDoSpanCarriesOutcome(t *testing.T) {
	inst, _, spans := setup(t)
	scope := once.New(nil, once.WithObserver(inst.Observer())).Scope("buyer-42")
	ctx := context.Background()
	ok := func(context.Context) (int, error) { return 1, nil }
	_, err := onceotel.Do(ctx, inst, scope, "k", nil, ok)
	require.NoError(t, err)
	_, err = onceotel.Do(ctx, inst, scope, "k", nil, ok)
	require.NoError(t, err)
	_, err = onceotel.Do(ctx, inst, scope, "", nil, ok)
	require.Error(t, err)

	ended := spans.Ended()
	require.Len(t, ended, 3)
	outcome := func(s sdktrace.ReadOnlySpan) string {
		for _, a := range s.Attributes() {
			if a.Key == "once.outcome" {
				return a.Value.AsString()
			}
		}
		return ""
	}
	assert.Equal(t, onceotel.OutcomeExecuted, outcome(ended[0]))
	assert.Equal(t, onceotel.OutcomeReplayed, outcome(ended[1]))
	assert.Equal(t, onceotel.OutcomeError, outcome(ended[2]))
	var names []string
	for _, e := range ended[0].Events() {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"once.claimed", "once.executed", "once.recorded"}, names)
}
