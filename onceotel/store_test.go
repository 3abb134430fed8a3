package onceotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/reconcile"
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

// TestHeldLifecycleIsCounted checks that the metrics follow a held key to
// its end: once.events counts held, then a Reconciler's reconciled (asked,
// left held) and resolved, and an operator's Resolve; once.store.duration
// records the hold and resolve round trips; the held gauge falls to zero.
func TestHeldLifecycleIsCounted(t *testing.T) {
	inst, reader, _ := setup(t)
	store := memory.New(nil)
	unregister, err := inst.ObserveStore(store)
	require.NoError(t, err)
	defer func() { require.NoError(t, unregister()) }()
	k := once.New(store, append(inst.Options(), once.WithHoldFor(once.HoldUntilResolved))...)
	scope := k.Scope("s")
	ctx := context.Background()
	for _, key := range []string{"charged", "unknown", "by-hand"} {
		_, _ = once.Do(ctx, scope, key, nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	}
	asked := 0
	r, err := reconcile.New(k, func(_ context.Context, h reconcile.HeldKey) (reconcile.Verdict[int], error) {
		asked++
		switch h.Key {
		case "charged":
			return reconcile.Verdict[int]{Settled: true, Value: 42}, nil
		case "unknown":
			return reconcile.Verdict[int]{}, nil
		default:
			return reconcile.Verdict[int]{}, errors.New("provider down")
		}
	}, reconcile.Config{})
	require.NoError(t, err)
	rep, err := r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, asked)
	require.Equal(t, 1, rep.Resolved)

	counts := eventCounts(t, reader)
	assert.Equal(t, int64(3), counts["held"])
	assert.Equal(t, int64(1), counts["resolved"])
	assert.Equal(t, int64(2), counts["reconciled"], "the unknown key and the failed lookup")

	require.NoError(t, once.Resolve(ctx, scope, "by-hand", nil, 7, nil))
	require.NoError(t, once.Resolve(ctx, scope, "unknown", nil, 8, nil))
	assert.Equal(t, int64(3), eventCounts(t, reader)["resolved"], "an operator's Resolve is counted too")

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	ops := map[string]uint64{}
	held := int64(-1)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "once.store.duration":
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					op, _ := dp.Attributes.Value(attribute.Key("once.op"))
					ops[op.AsString()] += dp.Count
				}
			case "once.records":
				for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					if st, _ := dp.Attributes.Value(attribute.Key("once.state")); st.AsString() == "held" {
						held = dp.Value
					}
				}
			}
		}
	}
	assert.Equal(t, uint64(3), ops["hold"])
	assert.Equal(t, uint64(3), ops["resolve"])
	assert.Equal(t, int64(0), held, "every held key was resolved")
}
