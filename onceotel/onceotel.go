// Package onceotel instruments once calls with OpenTelemetry: a span
// around every call (a once.Tracer, so calls made through oncehttp and
// once.DoTx get one too) with its outcome as an attribute, metrics
// from every event, and every event as a span event on that span.
//
//	inst, err := onceotel.New(nil) // global meter and tracer providers
//	k := once.New(store, inst.Options()...)
//	out, err := once.DoOutcome(ctx, k.Scope(user), key, fp, fn) // in a "once.Do" span
//
// # What is recorded
//
// Scopes are usually per user and keys per request: both have unbounded
// cardinality and can carry personal data, so neither is ever recorded, in
// a metric or on a span, in clear or hashed. Metrics and spans carry a
// scope class instead (Config.ScopeClass, "default" unless you set it).
// The one free text recorded is an error's: the status description of a
// span whose call failed is the text of the error Do returned, which can
// be fn's own error (a retryable or held error) and so whatever fn put in
// it. Config.ErrorText replaces that text (return "" to record none).
//
// # Steps
//
// The steps of a call (once.Step, once.StepTx) are span events on the
// call's span, like its other events: "once.step" when a step's function
// ran (with its error class and run time), "once.step_replayed" when its
// checkpoint answered, "once.step_unmatched" for a checkpoint no step
// used; a checkpoint that failed or lost the claim is a "once.store_error"
// or "once.lease_lost" event. Each carries the step's name as "once.step"
// (span events only, never metrics): a name is the program's, so keep
// per-request data out of it. A step gets no span of its own: the core
// has no hook around a step's function, and a span made after the fact
// would not be the parent of the spans the step's function made.
//
// # An observer never changes a call
//
// The tracer and the observer recover every panic raised inside them —
// by a span processor or exporter called synchronously (OnStart, OnEnd),
// a meter provider, Config.ScopeClass, Config.ErrorText, or an error's
// Error method — and report it to otel.Handle (the global error handler),
// so neither can crash a call nor change what Do returns: the core would
// otherwise let such a panic out of Do after the outcome was stored. What
// a recovered panic costs is the telemetry of that step: a panicking
// ScopeClass records the class "unknown", any other panic drops the rest
// of that event's or span's data (a span whose End panicked may not be
// exported).
//
// # once.DoTx
//
// The span covers the once.DoOutcome call that DoTx makes inside its
// transaction, and it ends before DoTx commits: the commit, and its
// result, are not part of it. A commit that fails after fn ran (a
// deferred constraint, a lost connection) leaves a span with outcome
// executed, status Unset and the events claimed, executed and recorded,
// though nothing was stored and the next call runs fn again. The commit's
// result is DoTx's return value (a *once.StoreError of Op "commit", in an
// *once.UnrecordedError): trace it in the caller, in a span of its own
// around DoTx. onceotel sees
// only the core's hooks, which end before the commit, so it cannot do
// better alone; a span covering the commit needs a hook in DoTx.
package onceotel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	// Defaults to a function that returns "default". If it panics, the
	// class is "unknown" and the panic goes to otel.Handle.
	ScopeClass func(scope string) string
	// ErrorText returns the status description recorded on the span of a
	// call that failed, from the error Do returned (fn's own error, for a
	// retryable or held error). Defaults to err.Error(); return "" to
	// record no text. The status code is Error either way.
	ErrorText func(err error) string
}

// Instrumentation holds the instruments. It is safe for concurrent use.
type Instrumentation struct {
	meter      metric.Meter
	tracer     trace.Tracer
	scopeClass func(string) string
	errorText  func(error) string
	events     metric.Int64Counter
	fnTime     metric.Float64Histogram
	storeTime  metric.Float64Histogram

	// retried holds the (scope, key) of completions whose attempt failed
	// and whose final event is still to come; retrying counts them, so a
	// completion without failures never takes the lock.
	retryMu  sync.Mutex
	retried  map[callKey]struct{}
	retrying atomic.Int64
}

type callKey struct{ scope, key string }

// New creates the instruments:
//   - once.events (counter): every event, by once.event and once.scope_class
//     (and once.class for executed and step);
//   - once.fn.duration (histogram, s): fn's run time, by once.class;
//   - once.store.duration (histogram, s): the duration of each store call
//     the core reports, by once.op: one sample per claim, renewal,
//     release, hold, resolve and checkpoint, and per completion attempt.
//     A failed attempt is the sample of its store_error event; the
//     completion's final event (recorded, lease_lost, unrecorded) is a
//     sample only when no attempt of it failed, since its time then spans
//     every attempt and the backoff between them. So an attempt that
//     succeeds after a failed one is not measured (the core reports no
//     time of its own for it), and no attempt is ever measured twice.
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
	if c.ErrorText == nil {
		c.ErrorText = error.Error
	}
	meter := c.MeterProvider.Meter(instrumentationName)
	events, err1 := meter.Int64Counter("once.events", metric.WithDescription("Events of once calls, by kind."))
	fnTime, err2 := meter.Float64Histogram("once.fn.duration", metric.WithUnit("s"),
		metric.WithDescription("Run time of fn in calls that executed it."))
	storeTime, err3 := meter.Float64Histogram("once.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of each store call, by operation; each completion attempt once."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	return &Instrumentation{
		meter:      meter,
		tracer:     c.TracerProvider.Tracer(instrumentationName),
		scopeClass: c.ScopeClass,
		errorText:  c.ErrorText,
		events:     events,
		fnTime:     fnTime,
		storeTime:  storeTime,
		retried:    map[callKey]struct{}{},
	}, nil
}

// recovered reports a panic raised in the instrumentation's hooks to
// otel.Handle; deferred, it keeps the panic from reaching the call.
func recovered(where string) {
	if r := recover(); r != nil {
		otel.Handle(fmt.Errorf("onceotel: %s panicked: %v", where, r))
	}
}

// class is the scope's class; a panicking ScopeClass gives "unknown".
func (i *Instrumentation) class(scope string) (class string) {
	defer func() {
		if r := recover(); r != nil {
			otel.Handle(fmt.Errorf("onceotel: Config.ScopeClass panicked: %v", r))
			class = "unknown"
		}
	}()
	return i.scopeClass(scope)
}

// Observer returns the once.Observer that records the metrics and adds a
// span event ("once.<event>") to the span in the call's context, if any,
// with the metric's attributes and, on the events of a step, its name
// (once.step) and its function's run time (once.step.duration_s).
// A panic inside it is recovered and reported to otel.Handle (see the
// package documentation).
func (i *Instrumentation) Observer() once.Observer {
	return func(ctx context.Context, e once.Event) {
		defer recovered("observer")
		span := trace.SpanFromContext(ctx)
		if st, ok := ctx.Value(startKey{}).(*callState); ok {
			if st == nil { // the call's span did not start: no enclosing span gets its events
				span = nil
			} else {
				span = st.span
			}
		}
		attrs := []attribute.KeyValue{
			attribute.String("once.event", e.Kind.String()),
			attribute.String("once.scope_class", i.class(e.Scope)),
		}
		if e.Kind == once.EventExecuted || e.Kind == once.EventStep {
			class := "none"
			if e.FnErr != nil {
				class = e.Class.String()
			}
			attrs = append(attrs, attribute.String("once.class", class))
			if e.Kind == once.EventExecuted {
				i.fnTime.Record(ctx, e.FnTime.Seconds(), metric.WithAttributes(attribute.String("once.class", class)))
			}
		}
		if e.Op != "" && e.StoreTime > 0 && i.singleAttempt(e) {
			i.storeTime.Record(ctx, e.StoreTime.Seconds(), metric.WithAttributes(attribute.String("once.op", e.Op)))
		}
		i.events.Add(ctx, 1, metric.WithAttributes(attrs...))
		if span != nil && span.IsRecording() {
			if e.Step != "" {
				attrs = append(attrs, attribute.String("once.step", e.Step))
				if e.Kind == once.EventStep && e.FnTime > 0 {
					attrs = append(attrs, attribute.Float64("once.step.duration_s", e.FnTime.Seconds()))
				}
			}
			span.AddEvent("once."+e.Kind.String(), trace.WithAttributes(attrs...))
		}
	}
}

// singleAttempt reports whether e's StoreTime is the time of one store
// call. A completion's or a hold's store_error events are; its final event
// is only if none of its attempts failed (the core retries a failed
// Complete or Hold, and the final event's time spans every attempt and the
// backoff between them). Only one call completes or holds a (scope, key)
// at a time, its claim's owner, so the failed attempts are told by the
// (scope, key).
func (i *Instrumentation) singleAttempt(e once.Event) bool {
	if e.Op != "complete" && e.Op != "hold" {
		return true
	}
	k := callKey{e.Scope, e.Key}
	if e.Kind == once.EventStoreError {
		i.retryMu.Lock()
		if _, ok := i.retried[k]; !ok {
			i.retried[k] = struct{}{}
			i.retrying.Add(1)
		}
		i.retryMu.Unlock()
		return true
	}
	if e.Kind == once.EventUnrecorded {
		// Its last attempt failed: its store_error event was the sample.
		i.forget(k)
		return false
	}
	return !i.forget(k) // recorded, lease_lost, held (with or without an error)
}

// forget ends the completion of k and reports whether an attempt of it
// failed.
func (i *Instrumentation) forget(k callKey) bool {
	if i.retrying.Load() == 0 {
		return false
	}
	i.retryMu.Lock()
	defer i.retryMu.Unlock()
	if _, ok := i.retried[k]; !ok {
		return false
	}
	delete(i.retried, k)
	i.retrying.Add(-1)
	return true
}

// Outcome values of the "once.outcome" span attribute.
const (
	OutcomeExecuted   = "executed"
	OutcomeReplayed   = "replayed"
	OutcomeInProgress = "in_progress"
	OutcomeKeyReused  = "key_reused"
	// OutcomeHeld: fn returned a held error and the key is held
	// (once.Held).
	OutcomeHeld  = "held"
	OutcomeError = "error"
	OutcomePanic = "panic"
)

// Options installs both the tracer and the observer:
// once.New(store, inst.Options()...).
func (i *Instrumentation) Options() []once.Option {
	return []once.Option{once.WithTracer(i.Tracer()), once.WithObserver(i.Observer())}
}

// Tracer returns the once.Tracer that wraps every call in a span named
// "once.Do" whose attributes are the scope class and the outcome
// (OutcomeExecuted, OutcomeReplayed, OutcomeInProgress, OutcomeKeyReused,
// OutcomeHeld, OutcomeError or OutcomePanic). A call that returns an error
// other than a recorded or replayed final error, in progress or key
// reused, or that panics, marks the span as an error, with the error's
// text (Config.ErrorText) as the status description; a held call is one.
// A panic inside the tracer, a span processor's OnStart or OnEnd
// included, is recovered and reported to otel.Handle.
func (i *Instrumentation) Tracer() once.Tracer { return tracer{i} }

type tracer struct{ i *Instrumentation }

type startKey struct{}

// callState is what the tracer keeps for one call, in its context; a
// nil *callState marks a call whose span could not be started.
type callState struct {
	span  trace.Span
	start time.Time
}

func (t tracer) TraceDoStart(ctx context.Context, d once.Event) (out context.Context) {
	defer func() {
		if r := recover(); r != nil {
			otel.Handle(fmt.Errorf("onceotel: tracer start panicked: %v", r))
			// No span: TraceDoEnd must not end an enclosing call's.
			out = context.WithValue(ctx, startKey{}, (*callState)(nil))
		}
	}()
	ctx2, span := t.i.tracer.Start(ctx, "once.Do", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("once.scope_class", t.i.class(d.Scope))))
	return context.WithValue(ctx2, startKey{}, &callState{span: span, start: time.Now()})
}

func (t tracer) TraceDoEnd(ctx context.Context, d once.Event) {
	defer recovered("tracer end")
	st, _ := ctx.Value(startKey{}).(*callState)
	if st == nil {
		return
	}
	span := st.span
	defer span.End()
	outcome := OutcomeExecuted
	switch {
	case d.Panicked:
		outcome = OutcomePanic
		span.SetStatus(codes.Error, "panic")
	case d.Status == once.Replayed:
		outcome = OutcomeReplayed
	case errors.Is(d.Err, once.ErrInProgress):
		outcome = OutcomeInProgress
	case errors.Is(d.Err, once.ErrKeyReused):
		outcome = OutcomeKeyReused
	case d.Err != nil && d.Status != once.Recorded:
		outcome = OutcomeError
		if d.Status == once.Held {
			outcome = OutcomeHeld
		}
		span.SetStatus(codes.Error, t.i.statusText(d.Err))
	}
	span.SetAttributes(attribute.String("once.outcome", outcome),
		attribute.Float64("once.duration_s", time.Since(st.start).Seconds()))
}

// statusText is Config.ErrorText of err; if it panics, the text is empty
// and the panic goes to otel.Handle.
func (i *Instrumentation) statusText(err error) (text string) {
	defer func() {
		if r := recover(); r != nil {
			otel.Handle(fmt.Errorf("onceotel: error text panicked: %v", r))
			text = ""
		}
	}()
	return i.errorText(err)
}
