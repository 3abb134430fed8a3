package onceotel_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/oncehttp"
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
				_, hasStep := dp.Attributes.Value(attribute.Key("once.step"))
				assert.False(t, hasStep, "step names stay on span events")
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

func spanOutcome(s sdktrace.ReadOnlySpan) string {
	for _, a := range s.Attributes() {
		if a.Key == "once.outcome" {
			return a.Value.AsString()
		}
	}
	return ""
}

func TestEveryCallGetsASpanWithItsOutcome(t *testing.T) {
	inst, _, spans := setup(t)
	scope := once.New(nil, inst.Options()...).Scope("buyer-42")
	ctx := context.Background()
	ok := func(context.Context) (int, error) { return 1, nil }
	_, err := once.Do(ctx, scope, "k", nil, ok)
	require.NoError(t, err)
	_, err = once.Do(ctx, scope, "k", nil, ok)
	require.NoError(t, err)
	_, err = once.Do(ctx, scope, "", nil, ok)
	require.Error(t, err)
	require.Panics(t, func() {
		_, _ = once.Do(ctx, scope, "p", nil, func(context.Context) (int, error) { panic("boom") })
	})

	ended := spans.Ended()
	require.Len(t, ended, 4)
	assert.Equal(t, onceotel.OutcomeExecuted, spanOutcome(ended[0]))
	assert.Equal(t, onceotel.OutcomeReplayed, spanOutcome(ended[1]))
	assert.Equal(t, onceotel.OutcomeError, spanOutcome(ended[2]))
	assert.Equal(t, codes.Error, ended[2].Status().Code)
	assert.Equal(t, onceotel.OutcomePanic, spanOutcome(ended[3]))
	assert.Equal(t, codes.Error, ended[3].Status().Code)
	var names []string
	for _, e := range ended[0].Events() {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"once.claimed", "once.executed", "once.recorded"}, names, "events land on the call's own span")
}

// fn's own spans are children of the call's span.
func TestFnRunsInsideTheSpan(t *testing.T) {
	inst, _, spans := setup(t)
	scope := once.New(nil, inst.Options()...).Scope("s")
	var inner trace.SpanContext
	_, err := once.Do(context.Background(), scope, "k", nil, func(ctx context.Context) (int, error) {
		inner = trace.SpanContextFromContext(ctx)
		return 1, nil
	})
	require.NoError(t, err)
	require.Len(t, spans.Ended(), 1)
	assert.Equal(t, spans.Ended()[0].SpanContext().SpanID(), inner.SpanID())
}

// The middleware calls the core, so its requests get the span without a
// parallel entry point.
func TestHTTPMiddlewareCallsAreTraced(t *testing.T) {
	inst, _, spans := setup(t)
	m, err := oncehttp.New(once.New(nil, inst.Options()...), oncehttp.Config{
		Scope: func(*http.Request) (string, error) { return "buyer-1", nil },
	})
	require.NoError(t, err)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "7f3a9c2e")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	ended := spans.Ended()
	require.Len(t, ended, 2)
	assert.Equal(t, onceotel.OutcomeExecuted, spanOutcome(ended[0]))
	assert.Equal(t, onceotel.OutcomeReplayed, spanOutcome(ended[1]))
}

// A handler's panic, which the middleware recovers to hold the key and
// answer 500, is a panic to the tracer, not a held call; a handler's own
// 500 is held.
func TestHTTPMiddlewarePanicIsTracedAsAPanic(t *testing.T) {
	inst, _, spans := setup(t)
	m, err := oncehttp.New(once.New(nil, inst.Options()...), oncehttp.Config{
		Scope: func(*http.Request) (string, error) { return "buyer-1", nil },
	})
	require.NoError(t, err)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	for _, path := range []string{"/panic", "/fail"} {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k"+path)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusInternalServerError, w.Code)
	}
	ended := spans.Ended()
	require.Len(t, ended, 2)
	assert.Equal(t, onceotel.OutcomePanic, spanOutcome(ended[0]))
	assert.Equal(t, codes.Error, ended[0].Status().Code)
	assert.Equal(t, onceotel.OutcomeHeld, spanOutcome(ended[1]))
}

// once.DoTx calls the core with the scope's policy, tracer included.
func TestDoTxCallsAreTraced(t *testing.T) {
	inst, _, spans := setup(t)
	store, _ := testservers.PostgresStore(t)
	scope := once.New(store, inst.Options()...).Scope("s-" + testservers.Suffix())
	for range 2 {
		_, err := once.DoTx(context.Background(), scope, "k", nil, store.BeginTx, func(context.Context, pgx.Tx) (int, error) {
			return 1, nil
		})
		require.NoError(t, err)
	}
	ended := spans.Ended()
	require.Len(t, ended, 2)
	assert.Equal(t, onceotel.OutcomeExecuted, spanOutcome(ended[0]))
	assert.Equal(t, onceotel.OutcomeReplayed, spanOutcome(ended[1]))
}
