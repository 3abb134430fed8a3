package consume

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/stagedoor/once"
)

// Do runs handler at most once per (scope, key), as once.Do does, and
// returns what a message consumer must do with the message. Use the
// message's ID or a business key as key, the consumer group as scope, and
// a digest of the payload as fp (nil for no check). See the package
// documentation for the decisions. Do never panics: a handler panic is
// recovered (after the claim is released) and answered RetryLater with
// ReasonHandlerError and a *once.PanicError.
func Do(ctx context.Context, scope once.Scope, key string, fp once.Fingerprint, handler func(context.Context) error) Decision {
	var fn func(context.Context) (struct{}, error)
	if handler != nil {
		fn = func(ctx context.Context) (struct{}, error) { return struct{}{}, handler(ctx) }
	}
	_, d := Value(ctx, scope, key, fp, fn)
	return d
}

// Value is Do for a handler that returns a value, stored and replayed as
// once.Do stores and replays it (a Watermill handler's produced messages,
// for example). The value is returned with the Ack decisions (T's zero
// value with a final error); every other decision returns T's zero
// value.
//
// A value whose encoded outcome is over the scope's cap
// (once.WithMaxOutcomeSize) cannot be replayed: the core stores an
// *once.OutcomeTooLargeError as the key's final error instead. Value then
// answers DeadLetter with ReasonTooLarge and no value, on the run that
// produced it and on every replay, so that no value is handed out that a
// redelivery could not hand out again. Raise the cap with
// once.WithMaxOutcomeSize (the store's own limits permitting); the stored
// error stays until the record's retention ends or a Resolve overwrites
// it.
func Value[T any](ctx context.Context, scope once.Scope, key string, fp once.Fingerprint, handler func(context.Context) (T, error)) (T, Decision) {
	if handler == nil {
		var zero T
		return zero, nilHandler()
	}
	return run(ctx, false, func() (once.Outcome[T], error) {
		return once.DoOutcome(ctx, scope, key, fp, func(ctx context.Context) (T, error) {
			v, err := handler(ctx)
			return v, rejectable(err)
		})
	})
}

// nilHandler is the decision for a nil handler.
func nilHandler() Decision {
	return Decision{Action: RetryLater, Reason: ReasonMisconfigured, Err: &once.InvalidInputError{Field: "fn", Reason: "nil"}}
}

// run makes the call (once.DoOutcome or once.DoTxOutcome) and decides
// from how it ended; a panic is recovered into ReasonHandlerError.
func run[T any](ctx context.Context, inTx bool, call func() (once.Outcome[T], error)) (v T, d Decision) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, d = zero, Decision{Action: RetryLater, Reason: ReasonHandlerError, Err: &once.PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	out, err := call()
	d = decide(ctx, out, err, inTx)
	if d.Action == Ack {
		return out.Value, d
	}
	var zero T
	return zero, d
}

// decide maps how the call ended (out.Status, which the core reports,
// never read from the handler's error, which may wrap
// once.ErrOutcomeUnrecorded or once.ErrLeaseLost from a nested Do) to a
// decision. In a transaction (inTx), an outcome that was not committed
// was rolled back with the handler's writes, so the message must be
// delivered again.
func decide[T any](ctx context.Context, out once.Outcome[T], err error, inTx bool) Decision {
	switch out.Status {
	case once.Replayed, once.Recorded:
		reason := ReasonDone
		if out.Status == once.Replayed {
			reason = ReasonReplayed
		}
		if _, tooLarge := err.(*once.OutcomeTooLargeError); tooLarge {
			// The core's own record, not a handler's final error that wraps
			// one (decoded as a *once.StoredError).
			return Decision{Action: DeadLetter, Reason: ReasonTooLarge, Err: err}
		}
		// A final error in err: every redelivery gets the same answer.
		return Decision{Action: Ack, Reason: reason, Err: err}
	case once.Held:
		return Decision{Action: RetryLater, Reason: ReasonHeld, RetryAfter: min(out.RetryAfter, HeldRedelivery), Err: err}
	case once.Unrecorded, once.HoldUnrecorded:
		switch {
		case inTx:
			return Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: err}
		case out.Status == once.HoldUnrecorded:
			// The outcome is unknown and the key is not held: it runs the
			// handler again after its lease, as the redelivery does.
			return Decision{Action: RetryLater, Reason: ReasonHeld, Err: err}
		}
		// The handler's effect happened: a redelivery would repeat it.
		return Decision{Action: Ack, Reason: ReasonUnrecorded, Err: err}
	case once.LeaseLost:
		return Decision{Action: RetryLater, Reason: ReasonLeaseLost, Err: err}
	case once.Released:
		switch {
		case errors.Is(err, ErrRejected):
			return Decision{Action: DeadLetter, Reason: ReasonRejected, Err: err}
		case endedBy(ctx, err):
			// The consumer is shutting down, not the message failing: a
			// broker adapter must not count this delivery toward its limit.
			return Decision{Action: RetryLater, Reason: ReasonCanceled, Err: err}
		}
		return Decision{Action: RetryLater, Reason: ReasonHandlerError, Err: err}
	}
	return refused(ctx, err)
}

// endedBy reports that ctx is done and err is (or wraps) its error or its
// cause: the handler gave up because the consumer's context ended.
func endedBy(ctx context.Context, err error) bool {
	cerr := ctx.Err()
	if cerr == nil {
		return false
	}
	if errors.Is(err, cerr) {
		return true
	}
	cause := context.Cause(ctx)
	return cause != nil && errors.Is(err, cause)
}

// refused decides when the handler did not run and nothing was replayed.
func refused(ctx context.Context, err error) Decision {
	var inProgress *once.InProgressError
	var invalid *once.InvalidInputError
	switch {
	case errors.As(err, &invalid) && invalid.Field == "key":
		return Decision{Action: DeadLetter, Reason: ReasonInvalidKey, Err: err}
	case invalid != nil:
		return Decision{Action: RetryLater, Reason: ReasonMisconfigured, Err: err}
	case errors.Is(err, once.ErrKeyReused):
		return Decision{Action: DeadLetter, Reason: ReasonKeyReused, Err: err}
	case errors.As(err, &inProgress):
		retryAfter := inProgress.RetryAfter
		if inProgress.Held {
			// A held key waits for its hold or a resolution; a redelivery
			// every HeldRedelivery at most learns the outcome in time.
			retryAfter = min(retryAfter, HeldRedelivery)
		}
		return Decision{Action: RetryLater, Reason: ReasonInProgress, RetryAfter: retryAfter, Err: err}
	case errors.Is(err, once.ErrUndecodable):
		return Decision{Action: DeadLetter, Reason: ReasonUndecodable, Err: err}
	case ctx != nil && ctx.Err() != nil:
		return Decision{Action: RetryLater, Reason: ReasonCanceled, Err: err}
	default: // a *once.StoreError: the claim (or the transaction) failed, the handler did not run
		return Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: err}
	}
}
