package onceotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

func TestObserveStoreGaugesHeldKeys(t *testing.T) {
	inst, reader, _ := setup(t)
	store := memory.New(nil)
	unregister, err := inst.ObserveStore(store)
	require.NoError(t, err)
	scope := once.New(store, append(inst.Options(), once.WithHoldFor(once.HoldUntilResolved))...).Scope("s")
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		_, _ = once.Do(ctx, scope, k, nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	}
	_, _ = once.Do(ctx, scope, "c", nil, func(context.Context) (int, error) { return 1, nil })

	gauges := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "once.records" {
					continue
				}
				for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					st, _ := dp.Attributes.Value(attribute.Key("once.state"))
					out[st.AsString()] = dp.Value
				}
			}
		}
		return out
	}
	require.Equal(t, map[string]int64{"pending": 0, "held": 2, "completed": 1}, gauges())
	require.Equal(t, int64(2), eventCounts(t, reader)["held"])

	require.NoError(t, once.Resolve(ctx, scope, "a", nil, 7, nil))
	require.Equal(t, int64(1), gauges()["held"])
	require.NoError(t, unregister())
	_, err = inst.ObserveStore(nil)
	require.Error(t, err)
}
