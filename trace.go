package once

import (
	"context"
	"errors"
)

// Tracer wraps every call of Do and DoOutcome in a start/end pair, as
// pgx's QueryTracer wraps a query: TraceDoStart runs first, before any
// validation or store call, and the context it returns is the call's
// context from then on (fn, the store calls and every observer get it), so
// a span started there is the parent of everything the call does;
// TraceDoEnd runs last, with that context, when the call returns or
// panics. Calls made through other packages (oncehttp's middleware,
// DoTx) go through Do, so the tracer sees them too.
//
// Each gets an Event: TraceDoStart an EventDoStart (Scope and Key),
// TraceDoEnd an EventDoEnd (Scope, Key, Status, Err and Panicked). These
// two kinds go to the tracer only, never to observers.
//
// Both methods run on the call's goroutine and must be safe for concurrent
// use. A panic in them propagates out of Do; TraceDoStart runs before the
// claim, TraceDoEnd after the claim is settled.
type Tracer interface {
	TraceDoStart(ctx context.Context, e Event) context.Context
	TraceDoEnd(ctx context.Context, e Event)
}

// WithTracer adds a tracer. With several, their starts run in the order
// they were added and their ends in reverse. The default is none.
func WithTracer(t Tracer) Option {
	return func(c *config) {
		if t == nil {
			return
		}
		if c.tracer != nil {
			t = tracerPair{c.tracer, t}
		}
		c.tracer = t
	}
}

// tracerPair runs two tracers, the inner one nested in the outer one.
type tracerPair struct{ outer, inner Tracer }

func (p tracerPair) TraceDoStart(ctx context.Context, e Event) context.Context {
	return p.inner.TraceDoStart(p.outer.TraceDoStart(ctx, e), e)
}

func (p tracerPair) TraceDoEnd(ctx context.Context, e Event) {
	p.inner.TraceDoEnd(ctx, e)
	p.outer.TraceDoEnd(ctx, e)
}

// traced runs call between the tracer's start and end. call sets
// recovered when fn returned a panic it recovered (returnsPanic).
func traced[T any](ctx context.Context, t Tracer, scope, key string, call func(ctx context.Context, recovered *bool) (Outcome[T], error)) (out Outcome[T], err error) {
	ctx = t.TraceDoStart(ctx, Event{Kind: EventDoStart, Scope: scope, Key: key})
	returned, recovered := false, false
	defer func() {
		t.TraceDoEnd(ctx, Event{Kind: EventDoEnd, Scope: scope, Key: key, Status: out.Status, Err: err, Panicked: !returned || recovered})
	}()
	out, err = call(ctx, &recovered)
	returned = true
	return out, err
}

// returnsPanic reports whether fn's error reports a panic fn recovered:
// its chain holds a *PanicError.
func returnsPanic(err error) bool {
	var p *PanicError
	return err != nil && errors.As(err, &p)
}
