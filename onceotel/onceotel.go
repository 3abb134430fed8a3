// Package onceotel instruments once calls with OpenTelemetry: a span
// around every call (a once.Tracer, so calls made through oncehttp and
// postgres.DoTx get one too) with its outcome as an attribute, metrics
// from every event, and every event as a span event on that span.
//
//	inst, err := onceotel.New(nil) // global meter and tracer providers
//	k := once.New(store, inst.Options()...)
//	out, err := once.DoOutcome(ctx, k.Scope(user), key, fp, fn) // in a "once.Do" span
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
	meter      metric.Meter
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
		meter:      meter,
		tracer:     c.TracerProvider.Tracer(instrumentationName),
		scopeClass: c.ScopeClass,
		events:     events,
		fnTime:     fnTime,
		storeTime:  storeTime,
	}, nil
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
			class := "none"
			if e.FnErr != nil {
				class = e.Class.String()
			}
			attrs = append(attrs, attribute.String("once.class", class))
			i.fnTime.Record(ctx, e.FnTime.Seconds(), metric.WithAttributes(attribute.String("once.class", class)))
		}
		if e.Op != "" && e.StoreTime > 0 {
			i.storeTime.Record(ctx, e.StoreTime.Seconds(), metric.WithAttributes(attribute.String("once.op", e.Op)))
		}
		i.events.Add(ctx, 1, metric.WithAttributes(attrs...))
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("once."+e.Kind.String(), trace.WithAttributes(attrs...))
		}
	}
}

// Outcome values of the "once.outcome" span attribute.
const (
	OutcomeExecuted   = "executed"
	OutcomeReplayed   = "replayed"
	OutcomeInProgress = "in_progress"
	OutcomeKeyReused  = "key_reused"
	OutcomeError      = "error"
	OutcomePanic      = "panic"
)

// Options installs both the tracer and the observer:
// once.New(store, inst.Options()...).
func (i *Instrumentation) Options() []once.Option {
	return []once.Option{once.WithTracer(i.Tracer()), once.WithObserver(i.Observer())}
}

// Tracer returns the once.Tracer that wraps every call in a span named
// "once.Do" whose attributes are the scope class and the outcome
// (OutcomeExecuted, OutcomeReplayed, OutcomeInProgress, OutcomeKeyReused,
// OutcomeError or OutcomePanic). A call that returns an error other than a
// recorded or replayed final error, in progress or key reused, or that
// panics, marks the span as an error.
func (i *Instrumentation) Tracer() once.Tracer { return tracer{i} }

type tracer struct{ i *Instrumentation }

type startKey struct{}

func (t tracer) TraceDoStart(ctx context.Context, d once.TraceDoStartData) context.Context {
	ctx, _ = t.i.tracer.Start(ctx, "once.Do", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("once.scope_class", t.i.scopeClass(d.Scope))))
	return context.WithValue(ctx, startKey{}, time.Now())
}

func (t tracer) TraceDoEnd(ctx context.Context, d once.TraceDoEndData) {
	span := trace.SpanFromContext(ctx)
	defer span.End()
	outcome := OutcomeExecuted
	switch {
	case d.Panicked:
		outcome = OutcomePanic
		span.SetStatus(codes.Error, "panic")
	case d.Replayed:
		outcome = OutcomeReplayed
	case errors.Is(d.Err, once.ErrInProgress):
		outcome = OutcomeInProgress
	case errors.Is(d.Err, once.ErrKeyReused):
		outcome = OutcomeKeyReused
	case d.Err != nil && !d.Recorded:
		outcome = OutcomeError
		span.SetStatus(codes.Error, d.Err.Error())
	}
	attrs := []attribute.KeyValue{attribute.String("once.outcome", outcome)}
	if start, ok := ctx.Value(startKey{}).(time.Time); ok {
		attrs = append(attrs, attribute.Float64("once.duration_s", time.Since(start).Seconds()))
	}
	span.SetAttributes(attrs...)
}
