package onceotel_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/onceotel"
)

// handled collects what reaches otel.Handle while the test runs.
func handled(t *testing.T) func() []error {
	t.Helper()
	var mu sync.Mutex
	var errs []error
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })
	return func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), errs...)
	}
}

// panicProc is a span processor whose OnStart or OnEnd panics, as a buggy
// exporter called synchronously does.
type panicProc struct {
	sdktrace.SpanProcessor
	onStart, onEnd bool
}

func (p panicProc) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	if p.onStart {
		panic("processor start bug")
	}
	p.SpanProcessor.OnStart(ctx, s)
}

func (p panicProc) OnEnd(s sdktrace.ReadOnlySpan) {
	if p.onEnd {
		panic("exporter bug")
	}
	p.SpanProcessor.OnEnd(s)
}

// A panicking span processor, on start or on end, neither crashes a call
// nor changes its answer: fn runs once, the value is stored and replayed,
// and the panic goes to otel.Handle.
func TestPanickingSpanProcessorDoesNotChangeACall(t *testing.T) {
	for _, p := range []panicProc{{onStart: true}, {onEnd: true}} {
		errs := handled(t)
		inst, err := onceotel.New(&onceotel.Config{TracerProvider: sdktrace.NewTracerProvider(
			sdktrace.WithSpanProcessor(panicProc{tracetest.NewSpanRecorder(), p.onStart, p.onEnd}))})
		require.NoError(t, err)
		scope := once.New(memory.New(nil), inst.Options()...).Scope("u")
		runs := 0
		for range 2 {
			var v int
			require.NotPanics(t, func() {
				v, err = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { runs++; return 42, nil })
			})
			require.NoError(t, err)
			assert.Equal(t, 42, v)
		}
		assert.Equal(t, 1, runs)
		assert.Len(t, errs(), 2, "each panic is reported")
	}
}

// The tracer's recovery is its own: fn's panic still leaves Do, whatever
// the exporter does.
func TestFnPanicStillPropagatesPastAPanickingExporter(t *testing.T) {
	handled(t)
	inst, err := onceotel.New(&onceotel.Config{TracerProvider: sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(panicProc{SpanProcessor: tracetest.NewSpanRecorder(), onEnd: true}))})
	require.NoError(t, err)
	scope := once.New(memory.New(nil), inst.Options()...).Scope("u")
	require.PanicsWithValue(t, "fn bug", func() {
		_, _ = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { panic("fn bug") })
	})
}

// A call whose span could not start ends no other span: a nested call's
// failed start leaves the enclosing call's span to its own call.
func TestFailedStartEndsNoEnclosingSpan(t *testing.T) {
	handled(t)
	outer, _, spans := setup(t)
	inner, err := onceotel.New(&onceotel.Config{TracerProvider: sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(panicProc{SpanProcessor: tracetest.NewSpanRecorder(), onStart: true}))})
	require.NoError(t, err)
	innerScope := once.New(memory.New(nil), inner.Options()...).Scope("in")
	scope := once.New(memory.New(nil), outer.Options()...).Scope("out")
	_, err = once.Do(context.Background(), scope, "k", nil, func(ctx context.Context) (int, error) {
		return once.Do(ctx, innerScope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	})
	require.NoError(t, err)
	ended := spans.Ended()
	require.Len(t, ended, 1)
	var names []string
	for _, e := range ended[0].Events() {
		names = append(names, e.Name)
	}
	assert.Equal(t, []string{"once.claimed", "once.executed", "once.recorded"}, names, "the outer span ended with its own call")
}

// A panicking ScopeClass records the class "unknown" and changes nothing
// of the call.
func TestPanickingScopeClassDoesNotChangeACall(t *testing.T) {
	errs := handled(t)
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	inst, err := onceotel.New(&onceotel.Config{
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		ScopeClass:     func(string) string { panic("scope class bug") },
	})
	require.NoError(t, err)
	scope := once.New(memory.New(nil), inst.Options()...).Scope("u")
	var v int
	require.NotPanics(t, func() {
		v, err = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 7, nil })
	})
	require.NoError(t, err)
	assert.Equal(t, 7, v)
	require.Len(t, spans.Ended(), 1)
	assert.Equal(t, onceotel.OutcomeExecuted, spanOutcome(spans.Ended()[0]))
	assert.NotEmpty(t, errs())
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "once.events" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				class, _ := dp.Attributes.Value(attribute.Key("once.scope_class"))
				assert.Equal(t, "unknown", class.AsString())
				found = true
			}
		}
	}
	assert.True(t, found)
}

// failingCompletes fails the first n Complete calls.
type failingCompletes struct {
	backends.Store
	mu sync.Mutex
	n  int
}

func (f *failingCompletes) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if fail {
		return false, errors.New("transient")
	}
	return f.Store.Complete(ctx, p)
}

// Hold fails the first n Hold calls.
func (f *failingCompletes) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if fail {
		return false, errors.New("transient")
	}
	return f.Store.Hold(ctx, p)
}

// storeSamples returns the number of once.store.duration samples by op.
func storeSamples(t *testing.T, reader *sdkmetric.ManualReader) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	n := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "once.store.duration" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				op, _ := dp.Attributes.Value(attribute.Key("once.op"))
				n[op.AsString()] += dp.Count
			}
		}
	}
	return n
}

// Each completion attempt is one sample of once.store.duration: the
// final event of a retried completion, whose time spans every attempt and
// the backoff, is none.
func TestStoreDurationCountsEachAttemptOnce(t *testing.T) {
	for _, tc := range []struct {
		fails    int
		complete uint64
		err      bool
	}{{0, 1, false}, {1, 1, false}, {3, 3, true}} {
		inst, reader, _ := setup(t)
		scope := once.New(&failingCompletes{Store: memory.New(nil), n: tc.fails}, inst.Options()...).Scope("u")
		_, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
		assert.Equal(t, tc.err, err != nil, "fails %d: %v", tc.fails, err)
		assert.Equal(t, map[string]uint64{"claim": 1, "complete": tc.complete}, storeSamples(t, reader), "fails %d", tc.fails)
	}
}

// So is each attempt of the Hold of a held error, which the core retries
// as it retries a completion.
func TestStoreDurationCountsEachHoldAttemptOnce(t *testing.T) {
	for _, tc := range []struct {
		fails      int
		hold       uint64
		unrecorded bool
	}{{0, 1, false}, {1, 1, false}, {3, 3, true}} {
		inst, reader, _ := setup(t)
		scope := once.New(&failingCompletes{Store: memory.New(nil), n: tc.fails}, inst.Options()...).Scope("u")
		_, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) {
			return 0, once.Hold(errors.New("provider timeout"))
		})
		assert.Equal(t, tc.unrecorded, errors.Is(err, once.ErrOutcomeUnrecorded), "fails %d: %v", tc.fails, err)
		assert.Equal(t, map[string]uint64{"claim": 1, "hold": tc.hold}, storeSamples(t, reader), "fails %d", tc.fails)
	}
}

// A held call's span has the outcome held; a failed one keeps error.
func TestHeldCallHasItsOwnOutcome(t *testing.T) {
	inst, _, spans := setup(t)
	scope := once.New(memory.New(nil), inst.Options()...).Scope("u")
	_, err := once.Do(context.Background(), scope, "h", nil, func(context.Context) (int, error) {
		return 0, once.Hold(errors.New("provider timeout"))
	})
	require.Error(t, err)
	_, err = once.Do(context.Background(), scope, "r", nil, func(context.Context) (int, error) {
		return 0, errors.New("503")
	})
	require.Error(t, err)
	ended := spans.Ended()
	require.Len(t, ended, 2)
	assert.Equal(t, onceotel.OutcomeHeld, spanOutcome(ended[0]))
	assert.Equal(t, codes.Error, ended[0].Status().Code)
	assert.Equal(t, onceotel.OutcomeError, spanOutcome(ended[1]))
}

// The status description is the error's text by default, and
// Config.ErrorText replaces it.
func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		text func(error) string
		want string
	}{{nil, "card 4242 declined"}, {func(error) string { return "" }, ""}, {func(error) string { panic("bug") }, ""}} {
		handled(t)
		spans := tracetest.NewSpanRecorder()
		inst, err := onceotel.New(&onceotel.Config{
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
			ErrorText:      tc.text,
		})
		require.NoError(t, err)
		scope := once.New(memory.New(nil), inst.Options()...).Scope("u")
		_, err = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) {
			return 0, errors.New("card 4242 declined")
		})
		require.Error(t, err)
		require.Len(t, spans.Ended(), 1)
		assert.Equal(t, codes.Error, spans.Ended()[0].Status().Code)
		assert.Equal(t, tc.want, spans.Ended()[0].Status().Description)
	}
}

// The span of a DoTx call ends before the commit, as the package
// documentation says: a commit that fails leaves a span of an executed,
// recorded call, and the failure is DoTx's return value.
func TestDoTxSpanEndsBeforeTheCommit(t *testing.T) {
	inst, _, spans := setup(t)
	store, pool := testservers.PostgresStore(t)
	ctx := context.Background()
	table := pgx.Identifier{"public", "once_otel_deferred_" + testservers.Suffix()}.Sanitize()
	_, err := pool.Exec(ctx, "CREATE TABLE "+table+" (x int UNIQUE DEFERRABLE INITIALLY DEFERRED)")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table) })
	scope := once.New(store, inst.Options()...).Scope("s-" + testservers.Suffix())
	_, err = once.DoTx(ctx, scope, "k", nil, store.BeginTx, func(ctx context.Context, tx pgx.Tx) (int, error) {
		_, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES (1), (1)")
		return 7, err
	})
	var se *once.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "commit", se.Op)
	require.ErrorIs(t, err, once.ErrOutcomeUnrecorded)
	ended := spans.Ended()
	require.Len(t, ended, 1)
	assert.Equal(t, onceotel.OutcomeExecuted, spanOutcome(ended[0]))
	assert.Equal(t, codes.Unset, ended[0].Status().Code)
	got, err := store.Get(ctx, scope.Name(), "k")
	found := got.State != 0
	require.NoError(t, err)
	assert.False(t, found, "nothing was stored")
}
