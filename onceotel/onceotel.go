// Package onceotel instruments once calls with OpenTelemetry: metrics from
// every event, span events on the caller's span, and a span around a call
// with its outcome as an attribute.
//
//	inst, err := onceotel.New(nil) // global meter and tracer providers
//	k := once.New(store, once.WithObserver(inst.Observer()))
//	out, err := onceotel.Do(ctx, inst, k.Scope(user), key, fp, fn)
//
// Scopes are usually per user and keys per request: both have unbounded
// cardinality, so neither is ever a metric attribute. Metrics carry a scope
// class (Config.ScopeClass, "default" unless you set it) and keys never
// appear anywhere in clear.
package onceotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/stagedoor/once"
)

const instrumentationName = "github.com/stagedoor/once/onceotel"

// Config configures the instrumentation. A nil *Config means defaults.
type Config struct {
	// MeterProvider makes the meter. Defaults to otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider makes the tracer used by Do. Defaults to
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// ScopeClass maps a scope to a low-cardinality class for the
	// "once.scope_class" attribute (e.g. "user", "consumer", "cron").
	// Defaults to a function that returns "default".
	ScopeClass func(scope string) string
}

// Instrumentation holds the instruments. It is safe for concurrent use.
type Instrumentation struct {
	tracer     trace.Tracer
	scopeClass func(string) string
	events     metric.Int64Counter
	fnTime     metric.Float64Histogram
	storeTime  metric.Float64Histogram
}

// New creates the instruments:
//   - once.events (counter): every event, by once.event and once.scope_class
//     (and once.class for executed);
//   - once.fn.duration (histogram, s): fn's run time, by once.class;
//   - once.store.duration (histogram, s): store round trips, by once.op.
func New(cfg *Config) (*Instrumentation, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.MeterProvider == nil {
		c.MeterProvider = otel.GetMeterProvider()
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.ScopeClass == nil {
		c.ScopeClass = func(string) string { return "default" }
	}
	meter := c.MeterProvider.Meter(instrumentationName)
	events, err1 := meter.Int64Counter("once.events", metric.WithDescription("Events of once calls, by kind."))
	fnTime, err2 := meter.Float64Histogram("once.fn.duration", metric.WithUnit("s"),
		metric.WithDescription("Run time of fn in calls that executed it."))
	storeTime, err3 := meter.Float64Histogram("once.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Store round trips, by operation."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return &Instrumentation{
		tracer:     c.TracerProvider.Tracer(instrumentationName),
		scopeClass: c.ScopeClass,
		events:     events,
		fnTime:     fnTime,
		storeTime:  storeTime,
	}, nil
}

// storeOp names the store operation whose round trip an event measured.
func storeOp(e once.Event) string {
	switch e.Kind {
	case once.EventClaimed, once.EventReplayed, once.EventInProgress, once.EventKeyReused:
		return "claim"
	case once.EventRecorded, once.EventUnrecorded, once.EventLeaseLost:
		return "complete"
	case once.EventRenewed:
		return "renew"
	case once.EventReleased:
		return "release"
	case once.EventStoreError:
		return e.Op
	}
	return ""
}

// Observer returns the once.Observer that records the metrics and adds a
// span event ("once.<event>") to the span in the call's context, if any.
func (i *Instrumentation) Observer() once.Observer {
	return func(ctx context.Context, e once.Event) {
		attrs := []attribute.KeyValue{
			attribute.String("once.event", e.Kind.String()),
			attribute.String("once.scope_class", i.scopeClass(e.Scope)),
		}
		if e.Kind == once.EventExecuted {
			attrs = append(attrs, attribute.String("once.class", e.Class.String()))
			i.fnTime.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String("once.class", e.Class.String())))
		} else if op := storeOp(e); op != "" && e.Duration > 0 {
			i.storeTime.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String("once.op", op)))
		}
		i.events.Add(ctx, 1, metric.WithAttributes(attrs...))
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("once."+e.Kind.String(), trace.WithAttributes(attrs...))
		}
	}
}

// Outcome values of the "once.outcome" span attribute set by Do.
const (
	OutcomeExecuted   = "executed"
	OutcomeReplayed   = "replayed"
	OutcomeInProgress = "in_progress"
	OutcomeKeyReused  = "key_reused"
	OutcomeError      = "error"
)

// Do is once.DoOutcome inside a span named "once.Do" whose attributes are
// the scope class and the outcome (OutcomeExecuted, OutcomeReplayed,
// OutcomeInProgress, OutcomeKeyReused or OutcomeError). A call that returns
// an error other than a replayed final error, in progress or key reused
// marks the span as an error.
func Do[T any](ctx context.Context, i *Instrumentation, scope once.Scope, key string, fp once.Fingerprint, fn func(context.Context) (T, error)) (once.Outcome[T], error) {
	ctx, span := i.tracer.Start(ctx, "once.Do", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("once.scope_class", i.scopeClass(scope.Name()))))
	defer span.End()
	start := time.Now()
	out, err := once.DoOutcome(ctx, scope, key, fp, fn)
	outcome := OutcomeExecuted
	switch {
	case out.Replayed:
		outcome = OutcomeReplayed
	case errors.Is(err, once.ErrInProgress):
		outcome = OutcomeInProgress
	case errors.Is(err, once.ErrKeyReused):
		outcome = OutcomeKeyReused
	case err != nil && !out.Recorded:
		outcome = OutcomeError
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(attribute.String("once.outcome", outcome),
		attribute.Float64("once.duration_s", time.Since(start).Seconds()))
	return out, err
}
