package oncehttp

import (
	"context"
	"errors"
	"log/slog"

	"github.com/stagedoor/once"
)

// storeFailureLogger returns the observer that logs, to logger
// (slog.Default() at the time of the line when nil), one line at Error
// level for each store failure that settles a request of the middleware,
// with the store's error and what it did to the request:
//
//   - the claim failed: the client got 503 store-unavailable and the
//     handler did not run;
//   - the release failed: the key stays claimed until its lease ends;
//   - the response could not be recorded, or the key held, after every
//     attempt: the client got the response, and the key runs the handler
//     again once its lease ends.
//
// A failed attempt that a later one recovers, and a failed renewal, which
// the lease's watchdog settles, are not logged. Of a transactional call
// (HandlerTx), which rolls back what failed, only a failed claim is logged
// here; the rest is logTxFailure's.
func storeFailureLogger(logger *slog.Logger) once.Observer {
	return func(ctx context.Context, e once.Event) {
		var effect string
		switch {
		case e.Kind == once.EventStoreError && e.Op == "claim":
			effect = "answered 503; the handler did not run"
		case transactional(ctx):
			return
		case e.Kind == once.EventStoreError && e.Op == "release":
			effect = "the key stays claimed until its lease ends"
		case e.Kind == once.EventUnrecorded,
			e.Kind == once.EventHeld && e.Err != nil && !errors.Is(e.Err, once.ErrLeaseLost):
			effect = "the response was sent but not recorded; the key runs the handler again once its lease ends"
		default:
			return
		}
		logStoreFailure(ctx, logger, e.Op, e.Err, effect)
	}
}

// transactional reports whether ctx is a transactional call's (HandlerTx).
func transactional(ctx context.Context) bool {
	g := guardedFrom(ctx)
	return g != nil && g.tx
}
