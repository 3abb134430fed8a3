package once

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// Action is what a message consumer does with a message after Consume.
type Action uint8

const (
	// Ack: the message is done. Acknowledge it (NATS Ack, AMQP Ack) and do
	// not deliver it again.
	Ack Action = iota + 1
	// RetryLater: the message is not done yet and must be delivered again,
	// preferably after Decision.RetryAfter (NATS NakWithDelay, AMQP Nack
	// with requeue).
	RetryLater
	// DeadLetter: the message can never be processed as it is. Move it to a
	// dead-letter queue (NATS Term, AMQP Nack without requeue) so that a
	// person looks at it; redelivering it would fail the same way forever.
	DeadLetter
)

// String returns "ack", "retry later" or "dead letter".
func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case RetryLater:
		return "retry later"
	case DeadLetter:
		return "dead letter"
	default:
		return "unknown action"
	}
}

// Reason says why Consume decided its Action. Every Reason belongs to
// exactly one Action; see Consume for the table.
type Reason string

// The reasons of Consume's decisions.
const (
	ReasonDone          Reason = "done"                 // Ack: the handler ran now and its success is recorded
	ReasonReplayed      Reason = "replayed"             // Ack: the handler ran before; its success is replayed
	ReasonFinal         Reason = "final error"          // Ack: the handler returned a final error now; it is recorded
	ReasonReplayedFinal Reason = "replayed final error" // Ack: a final error recorded before is replayed
	ReasonUnrecorded    Reason = "outcome unrecorded"   // Ack: the handler finished but the store did not record it
	ReasonInProgress    Reason = "in progress"          // RetryLater: another consumer holds a live claim on the key
	ReasonHeld          Reason = "held"                 // RetryLater: the handler returned a Hold error; the key is held (see Consume)
	ReasonHandlerError  Reason = "handler error"        // RetryLater: the handler returned a retryable error
	ReasonPanicked      Reason = "handler panicked"     // RetryLater: the handler panicked (the claim was released), or a hook after it (see Do)
	ReasonLeaseLost     Reason = "lease lost"           // RetryLater: the claim was taken over while the handler ran
	ReasonStoreDown     Reason = "store unavailable"    // RetryLater: the claim could not be made; the handler did not run
	ReasonCanceled      Reason = "canceled"             // RetryLater: the consumer's context ended before the handler ran, or while it ran and it returned the context's error
	ReasonMisconfigured Reason = "misconfigured"        // RetryLater: the scope, context, handler or fingerprint is invalid
	ReasonKeyReused     Reason = "key reused"           // DeadLetter: the key is bound to another payload
	ReasonInvalidKey    Reason = "invalid key"          // DeadLetter: the key is missing, too long or malformed
	ReasonUndecodable   Reason = "undecodable"          // DeadLetter: the stored outcome cannot be decoded
	ReasonRejected      Reason = "rejected"             // DeadLetter: the handler returned a Reject error
	ReasonTooLarge      Reason = "outcome too large"    // DeadLetter: ConsumeValue's value is over the outcome cap
	ReasonExhausted     Reason = "deliveries exhausted" // DeadLetter: a broker adapter's delivery limit was reached while the handler kept failing
)

// HeldRedelivery bounds the RetryAfter of a message whose key is held,
// by this delivery (ReasonHeld) or another (ReasonInProgress): its hold
// may last until resolved, and a redelivery every HeldRedelivery at most
// learns the resolved outcome in time.
const HeldRedelivery = time.Minute

// StoreRetryAfter is the RetryAfter hint of a decision taken because the
// store could not be reached.
const StoreRetryAfter = time.Second

// Decision is Consume's answer: what to do with the message, and why.
type Decision struct {
	// Action is what the consumer does with the message.
	Action Action
	// Reason says why; it belongs to Action.
	Reason Reason
	// RetryAfter hints when to deliver the message again when Action is
	// RetryLater; zero means no hint (use the broker's own redelivery
	// delay). It is zero for the other actions.
	RetryAfter time.Duration
	// Err is the error behind the decision: the handler's error (first run
	// or replayed final error), the panic as a *PanicError, or the failure
	// of the store or of validation. It is nil for ReasonDone and
	// ReasonReplayed.
	Err error
}

// String describes the decision for logs, without message data.
func (d Decision) String() string {
	s := d.Action.String() + " (" + string(d.Reason) + ")"
	if d.Action == RetryLater && d.RetryAfter > 0 {
		s += " after " + d.RetryAfter.String()
	}
	return s
}

// PanicError is the Err of a ReasonPanicked decision: the value the
// handler panicked with and the stack at the panic.
//
// It is also how fn reports to Do a panic it recovered itself, to settle
// the key otherwise than by the release a panic gets (oncehttp's
// middleware holds the key of a panicking handler and answers 500): an
// error from fn whose chain holds a *PanicError makes the call traced as
// panicked (TraceDoEndData.Panicked), and observers find it in the
// EventExecuted's FnErr. It changes nothing else: the error's class is
// that of any error fn returns (Hold, Final, Retry, the classifier's).
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("once: handler panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrRejected marks a message the handler rejected with Reject.
var ErrRejected = errors.New("once: message rejected")

type rejected struct{ err error }

func (e *rejected) Error() string        { return e.err.Error() }
func (e *rejected) Unwrap() error        { return e.err }
func (e *rejected) Is(target error) bool { return target == ErrRejected }

// Reject marks err as the reason a message can never be processed (its
// payload cannot be decoded, it names something that does not exist):
// Consume answers DeadLetter with ReasonRejected. Nothing is stored and
// the claim is released, so a corrected copy of the message with the same
// key is processed normally. Reject(nil) is nil.
func Reject(err error) error {
	if err == nil {
		return nil
	}
	return &rejected{err: err}
}

// Consume runs handler at most once per (scope, key), as Do does, and
// returns what a message consumer must do with the message. Use the
// message's ID or a business key as key, the consumer group as scope, and
// a digest of the payload as fp (nil for no check).
//
// Consume never panics: a handler panic is recovered (after the claim is
// released) and answered RetryLater with a *PanicError. The table of its
// decisions:
//
//	what happened                                     Action      Reason
//	handler ran now, success recorded                 Ack         ReasonDone
//	key done before, success replayed                 Ack         ReasonReplayed
//	handler returned a final error now, recorded      Ack         ReasonFinal
//	key done before, final error replayed             Ack         ReasonReplayedFinal
//	handler finished, store failed to record it       Ack         ReasonUnrecorded
//	another consumer holds a live claim on the key    RetryLater  ReasonInProgress (RetryAfter: lease left, at most 1s;
//	                                                                                   held key: hold left, at most HeldRedelivery)
//	handler returned a Hold error                     RetryLater  ReasonHeld (RetryAfter: the hold, WithHoldFor,
//	                                                                             at most HeldRedelivery)
//	handler returned a retryable error                RetryLater  ReasonHandlerError
//	handler panicked                                  RetryLater  ReasonPanicked
//	claim lost to another consumer while running      RetryLater  ReasonLeaseLost
//	store unreachable at the claim (handler not run)  RetryLater  ReasonStoreDown (RetryAfter: StoreRetryAfter)
//	consumer's context ended before the handler ran   RetryLater  ReasonCanceled
//	  or while it ran, and it returned ctx's error
//	invalid scope, nil context or handler, long fp    RetryLater  ReasonMisconfigured
//	key bound to another payload (fingerprint)        DeadLetter  ReasonKeyReused
//	key empty, over 255 bytes, bad UTF-8, control     DeadLetter  ReasonInvalidKey
//	stored outcome cannot be decoded                  DeadLetter  ReasonUndecodable
//	handler returned a Reject error                   DeadLetter  ReasonRejected
//	ConsumeValue: value over the outcome cap          DeadLetter  ReasonTooLarge (first run and replays)
//
// Consume itself never answers ReasonExhausted: a broker adapter (natsonce,
// amqponce, watermillonce) turns a handler error or panic into it when the
// message has reached the adapter's delivery limit, and backs off the redelivery of a
// RetryLater without a RetryAfter hint by the delivery count, so that a
// poison message is neither redelivered at broker speed nor forever. Since
// every redelivery spends one of the broker's deliveries, the adapters
// also wait out an in-progress key's lease (InProgressError.LeaseRemaining)
// rather than the one-second RetryAfter, and back off a store outage by
// the delivery count.
//
// A handler that returns the error of Consume's ctx, or one wrapping it
// (or its cause), after ctx ended is answered ReasonCanceled, not
// ReasonHandlerError: a consumer shutting down is not a failure of the
// message. A deadline set on the ctx given to Consume therefore counts as
// canceled too; a handler's own timeout belongs inside the handler
// (context.WithTimeout of the handler's ctx), whose expiry is a handler
// error. The broker adapters tell the two apart by ctx's error: a
// cancelled ctx is a shutdown, never counted toward MaxDeliveries nor
// dead-lettered, while a ctx past its deadline (a per-message timeout
// around the adapter's call, a Watermill middleware.Timeout) is backed
// off and counted as a handler failure, so that a handler that always
// outlives it is not redelivered forever.
//
// The handler's error is classified once per call (its marks, then the
// scope's Classifier), and the decision is taken on the class the core
// applied to the claim: a Classifier that is not a pure function (one
// that samples, counts or trips a breaker) cannot make Consume answer
// ReasonHeld for a claim the core released, or the reverse.
//
// The unrecorded and lease-lost rows are the core's own completion
// failures (Outcome.Status Unrecorded, LeaseLost), never read from the
// handler's error: a handler error that wraps ErrOutcomeUnrecorded or
// ErrLeaseLost (a nested Do's failure) is a handler error like any other.
// An unrecorded outcome is acknowledged because the handler's effect has
// happened: redelivering the message would repeat it. A lost lease is not,
// because the consumer that took the key over may still fail; the
// redelivery then replays its outcome. A misconfiguration is retried, not
// dead-lettered, since the message is not at fault.
//
// A Hold error whose hold the store failed to write is still ReasonHeld,
// with an Err that carries ErrOutcomeUnrecorded: the key is not held, it
// stays claimed until its lease ends and then runs the handler again, as
// the redelivery after RetryAfter does (the outcome is unknown, so
// acknowledging could lose the message). A Hold that finds the claim taken
// over is ReasonLeaseLost.
func Consume(ctx context.Context, scope Scope, key string, fp Fingerprint, handler func(context.Context) error) Decision {
	var fn func(context.Context) (struct{}, error)
	if handler != nil {
		fn = func(ctx context.Context) (struct{}, error) { return struct{}{}, handler(ctx) }
	}
	_, d := ConsumeValue(ctx, scope, key, fp, fn)
	return d
}

// ConsumeValue is Consume for a handler that returns a value, stored and
// replayed as Do stores and replays it (a Watermill handler's produced
// messages, for example). The value is returned with the Ack decisions
// ReasonDone, ReasonReplayed and ReasonUnrecorded only; every other
// decision returns T's zero value.
//
// A value whose encoded outcome is over the scope's cap (WithMaxOutcomeSize,
// DefaultMaxOutcomeSize by default) cannot be replayed: the core stores an
// *OutcomeTooLargeError as the key's final error instead. ConsumeValue then
// answers DeadLetter with ReasonTooLarge and no value, on the run that
// produced it and on every replay, so that no value is handed out that a
// redelivery could not hand out again. Raise the cap with
// WithMaxOutcomeSize (the store's own limits permitting); the stored error
// stays until the record's retention ends or a Resolve overwrites it.
func ConsumeValue[T any](ctx context.Context, scope Scope, key string, fp Fingerprint, handler func(context.Context) (T, error)) (v T, d Decision) {
	if handler == nil {
		return v, misconfigured()
	}
	return consumeValue(ctx, false, func() (Outcome[T], error) {
		return DoOutcome(ctx, scope, key, fp, func(ctx context.Context) (T, error) {
			v, err := handler(ctx)
			return v, rejectable(err)
		})
	})
}

// misconfigured is the decision for a nil handler.
func misconfigured() Decision {
	return Decision{Action: RetryLater, Reason: ReasonMisconfigured, Err: &InvalidInputError{Field: "fn", Reason: "nil"}}
}

// rejectable marks a rejected message's error Retry, whatever its other
// marks, so that the claim is released for a corrected copy of the
// message.
func rejectable(err error) error {
	if errors.Is(err, ErrRejected) {
		return Retry(err)
	}
	return err
}

// consumeValue runs the call do (DoOutcome or DoTxOutcome, the handler's
// error passed through rejectable) and decides from how it ended; a
// panic is recovered into ReasonPanicked.
func consumeValue[T any](ctx context.Context, inTx bool, do func() (Outcome[T], error)) (v T, d Decision) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, d = zero, Decision{Action: RetryLater, Reason: ReasonPanicked, Err: &PanicError{Value: p, Stack: debug.Stack()}}
		}
	}()
	out, err := do()
	d = decide(ctx, out, err, inTx)
	if tooLarge(d) {
		d = Decision{Action: DeadLetter, Reason: ReasonTooLarge, Err: d.Err}
	}
	switch d.Reason {
	case ReasonDone, ReasonReplayed, ReasonUnrecorded:
		return out.Value, d
	default:
		var zero T
		return zero, d
	}
}

// tooLarge reports a recorded or replayed final error that is the core's
// own "outcome too large" record. The check is on the answer itself, not
// its chain: the core answers the decoded *OutcomeTooLargeError, while a
// handler's final error that wraps one is decoded as a *StoredError.
func tooLarge(d Decision) bool {
	if d.Reason != ReasonFinal && d.Reason != ReasonReplayedFinal {
		return false
	}
	_, ok := d.Err.(*OutcomeTooLargeError)
	return ok
}

// decide maps how the call ended (out.Status, read from the core, never
// from the handler's error, which may wrap ErrOutcomeUnrecorded or
// ErrLeaseLost from a nested Do) to a decision. In a transaction (inTx),
// an outcome that was not recorded was rolled back with the handler's
// writes, so the message must be delivered again.
func decide[T any](ctx context.Context, out Outcome[T], err error, inTx bool) Decision {
	switch out.Status {
	case Replayed:
		if err != nil {
			return Decision{Action: Ack, Reason: ReasonReplayedFinal, Err: err}
		}
		return Decision{Action: Ack, Reason: ReasonReplayed}
	case Recorded:
		// A final error, or a value recorded as an error (too large, not
		// encodable): every redelivery gets the same answer.
		if err != nil {
			return Decision{Action: Ack, Reason: ReasonFinal, Err: err}
		}
		return Decision{Action: Ack, Reason: ReasonDone}
	case Held:
		return Decision{Action: RetryLater, Reason: ReasonHeld, RetryAfter: min(out.RetryAfter, HeldRedelivery), Err: err}
	case Unrecorded, HoldUnrecorded:
		if inTx {
			return Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: err}
		}
		if out.Status == HoldUnrecorded {
			// The key is not held: it runs the handler again after its
			// lease, as the redelivery does.
			return Decision{Action: RetryLater, Reason: ReasonHeld, Err: err}
		}
		// The handler's effect happened: a redelivery would repeat it.
		return Decision{Action: Ack, Reason: ReasonUnrecorded, Err: err}
	case LeaseLost:
		return Decision{Action: RetryLater, Reason: ReasonLeaseLost, Err: err}
	case Released:
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
	return decideNotRan(ctx, err)
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

// decideNotRan decides when the handler did not run and nothing was
// replayed.
func decideNotRan(ctx context.Context, err error) Decision {
	var inProgress *InProgressError
	var invalid *InvalidInputError
	switch {
	case errors.As(err, &invalid) && invalid.Field == "key":
		return Decision{Action: DeadLetter, Reason: ReasonInvalidKey, Err: err}
	case invalid != nil:
		return Decision{Action: RetryLater, Reason: ReasonMisconfigured, Err: err}
	case errors.Is(err, ErrKeyReused):
		return Decision{Action: DeadLetter, Reason: ReasonKeyReused, Err: err}
	case errors.As(err, &inProgress):
		retryAfter := inProgress.RetryAfter
		if inProgress.Held {
			// A held key waits for its hold or a resolution; a redelivery
			// every HeldRedelivery at most learns the outcome in time.
			retryAfter = min(retryAfter, HeldRedelivery)
		}
		return Decision{Action: RetryLater, Reason: ReasonInProgress, RetryAfter: retryAfter, Err: err}
	case errors.Is(err, ErrUndecodable):
		return Decision{Action: DeadLetter, Reason: ReasonUndecodable, Err: err}
	case ctx != nil && ctx.Err() != nil:
		return Decision{Action: RetryLater, Reason: ReasonCanceled, Err: err}
	default: // a *StoreError: the claim (or the transaction) failed, the handler did not run
		return Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: err}
	}
}
