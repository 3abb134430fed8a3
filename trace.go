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
// Both methods run on the call's goroutine and must be safe for concurrent
// use. A panic in them propagates out of Do; TraceDoStart runs before the
// claim, TraceDoEnd after the claim is settled.
type Tracer interface {
	TraceDoStart(ctx context.Context, data TraceDoStartData) context.Context
	TraceDoEnd(ctx context.Context, data TraceDoEndData)
}

// TraceDoStartData describes a call that starts.
type TraceDoStartData struct {
	Scope string
	// Key is the idempotency key in clear; hash or drop it before export.
	Key string
}

// TraceDoEndData describes how a call ended.
type TraceDoEndData struct {
	Scope string
	Key   string
	// Status is that of the call's Outcome.
	Status Status
	// Err is the error the call returned.
	Err error
	// Panicked reports that fn or a hook panicked: either the call is
	// panicking, and the panic continues after TraceDoEnd; or fn ran in
	// this call and returned an error whose chain holds a *PanicError, a
	// panic it recovered itself (as oncehttp's middleware does, to hold
	// the key and answer 500; see PanicError), and the call returned Err.
	Panicked bool
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

func (p tracerPair) TraceDoStart(ctx context.Context, d TraceDoStartData) context.Context {
	return p.inner.TraceDoStart(p.outer.TraceDoStart(ctx, d), d)
}

func (p tracerPair) TraceDoEnd(ctx context.Context, d TraceDoEndData) {
	p.inner.TraceDoEnd(ctx, d)
	p.outer.TraceDoEnd(ctx, d)
}

// traced runs call between the tracer's start and end. call sets
// recovered when fn returned a panic it recovered (returnsPanic).
func traced[T any](ctx context.Context, t Tracer, scope, key string, call func(ctx context.Context, recovered *bool) (Outcome[T], error)) (out Outcome[T], err error) {
	ctx = t.TraceDoStart(ctx, TraceDoStartData{Scope: scope, Key: key})
	returned, recovered := false, false
	defer func() {
		t.TraceDoEnd(ctx, TraceDoEndData{Scope: scope, Key: key, Status: out.Status, Err: err, Panicked: !returned || recovered})
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
