package once

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Sentinel errors. Check them with errors.Is. The errors of a kind that
// carries detail (invalid input, a store failure, an outcome too large)
// are typed instead: check them with errors.As (*InvalidInputError,
// *StoreError, *OutcomeTooLargeError); *InProgressError and
// *UnrecordedError also match ErrInProgress and ErrOutcomeUnrecorded.
var (
	// ErrInProgress: another call holds a live claim on the key (HTTP 409).
	// The error is an *InProgressError with a retry-after hint.
	ErrInProgress = errors.New("once: a request with this key is in progress")

	// ErrKeyReused: the key is bound to another fingerprint (HTTP 422). The
	// stored outcome is never returned with it, and the error never echoes
	// stored data.
	ErrKeyReused = errors.New("once: idempotency key reused with a different request")

	// ErrLeaseLost: the caller's claim was taken over (its lease expired
	// while fn ran, for example after a long pause) or resolved by someone
	// else; the caller's outcome was not stored and nothing was overwritten.
	ErrLeaseLost = errors.New("once: lease lost to another owner")

	// ErrOutcomeUnrecorded: fn finished but its outcome could not be stored
	// after several attempts, or fn returned a held error and the key could
	// not be held. The value (and fn's error) is returned with this error;
	// the key stays claimed until its lease ends and then runs fn again.
	ErrOutcomeUnrecorded = errors.New("once: outcome not recorded")

	// ErrAlreadyCompleted: Resolve found the key completed already; the
	// stored outcome was left as it was.
	ErrAlreadyCompleted = errors.New("once: key already completed")

	// ErrUndecodable: a stored outcome could not be decoded into the
	// requested type (for example after the type changed between deploys).
	// fn does not run.
	ErrUndecodable = errors.New("once: stored outcome cannot be decoded")

	// ErrStepInterrupted: an at-most-once step (StepAtMostOnce) was found
	// started but not finished, so its effect may or may not have
	// happened. StepAtMostOnce returns it marked Hold, in an error that
	// names the step and gives the held record the code
	// "once_step_interrupted".
	ErrStepInterrupted = errors.New("once: step interrupted")
)

// InProgressError reports a live claim held by another call.
type InProgressError struct {
	// RetryAfter is a hint for when to try again. For a running claim, the
	// time left on the owner's lease, capped at one second (the owner
	// usually finishes sooner). For a held key, the time left before the
	// key can be claimed again: its hold (and a reconciler's lease, if
	// one is live), which for a key held until resolved is about 292
	// years — honest: only a resolution ends it.
	RetryAfter time.Duration
	// LeaseRemaining is the time left on the owner's lease by the store's
	// clock (on a held key, on a reconciler's lease; zero when none).
	LeaseRemaining time.Duration
	// Held reports that the key is held (see Hold): its outcome is unknown
	// and nothing is running; it waits for its hold to end or for its real
	// outcome (Resolve, package reconcile). HoldRemaining is the hold left, by
	// the store's clock (HoldUntilResolved, or close to it, when held until
	// resolved), and HeldFor how long the key has been held.
	Held          bool
	HoldRemaining time.Duration
	HeldFor       time.Duration
}

func (e *InProgressError) Error() string {
	if e.Held && e.HoldRemaining > 100*365*24*time.Hour {
		return ErrInProgress.Error() + " (held until resolved: outcome unknown)"
	}
	if e.Held {
		return ErrInProgress.Error() + " (held: outcome unknown; retry after " + e.RetryAfter.String() + ")"
	}
	return ErrInProgress.Error() + " (retry after " + e.RetryAfter.String() + ")"
}

// Is reports whether target is ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// InvalidInputError reports which input (a scope, key, fingerprint or
// argument) failed validation and why; nothing reached the store. It never
// contains the input itself.
type InvalidInputError struct {
	// Field is "ctx", "scope", "key", "fingerprint" or "fn", "err" (an
	// error that its marks make held or retryable, see WithClassifier, given
	// to Resolve as the key's answer), or the option "lease",
	// "retention", "wait" or "max_outcome_size". Packages beside the core
	// name their own fields (package reconcile's "check", "batch", …).
	Field string
	// Reason says what is wrong, e.g. "longer than 255 bytes".
	Reason string
}

func (e *InvalidInputError) Error() string {
	return "once: invalid " + e.Field + ": " + e.Reason
}

// StoreError wraps a failure of the store during Op. When it comes from
// the claim, fn did not run: once fails closed.
type StoreError struct {
	// Op is the store operation: "claim" (Do and its kin, before fn
	// runs), "resolve" (Resolve, and package reconcile), "list" and
	// "leaseheld" (package reconcile), or DoTx's "begin" (before fn runs) and
	// "commit" (the Err of an *UnrecordedError). Do's own writes after fn
	// ran are not StoreErrors: a completion or a hold that fails is an
	// *UnrecordedError (ErrOutcomeUnrecorded), a renewal that cannot prove
	// the lease ends in ErrLeaseLost, and a failed release is reported to
	// the observers (EventStoreError) while Do returns fn's error.
	Op  string
	Err error
}

func (e *StoreError) Error() string { return "once: store " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the backend's error.
func (e *StoreError) Unwrap() error { return e.Err }

// UnrecordedError is returned, with fn's value, when fn finished but its
// outcome could not be stored, and with fn's held error when the key could
// not be held.
type UnrecordedError struct {
	// Err is the last store failure.
	Err error
}

func (e *UnrecordedError) Error() string {
	return ErrOutcomeUnrecorded.Error() + ": " + e.Err.Error()
}

// Unwrap returns the last store failure.
func (e *UnrecordedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrOutcomeUnrecorded.
func (e *UnrecordedError) Is(target error) bool { return target == ErrOutcomeUnrecorded }

// OutcomeTooLargeError reports an encoded outcome over the size cap
// (WithMaxOutcomeSize). fn's value is returned once with it, and every
// retry of the key is answered with it (fn does not run again).
type OutcomeTooLargeError struct {
	// Size is the encoded size in bytes.
	Size int
	// Limit is the cap in force.
	Limit int
}

// errOutcomeTooLargeText is the text of every *OutcomeTooLargeError.
const errOutcomeTooLargeText = "once: outcome too large to store"

func (e *OutcomeTooLargeError) Error() string {
	if e.Size == 0 {
		return errOutcomeTooLargeText
	}
	return errOutcomeTooLargeText + ": " + strconv.Itoa(e.Size) + " bytes, limit " + strconv.Itoa(e.Limit)
}

// StoredError is a final error as it comes back from the store when its
// registered type alone cannot give the original text: it keeps the code
// and the text of the original. When the original wrapped an error of a
// type registered with RegisterError, the StoredError wraps that error, so
// errors.As and errors.Is find it. Without a registered type, register one
// to get the original type back.
type StoredError struct {
	// Code is the code the error was registered or stored with; empty when
	// it had none. An error can give its code by implementing
	// ErrorCode() string.
	Code string
	// Message is the original error's Error() text (at most 4096 bytes).
	Message string

	err error
}

func (e *StoredError) Error() string { return e.Message }

// Unwrap returns the registered error the original wrapped, or nil.
func (e *StoredError) Unwrap() error { return e.err }

// ErrorCode returns Code, so a StoredError stored again keeps its code.
func (e *StoredError) ErrorCode() string { return e.Code }

// undecodable wraps a decode failure of a stored outcome.
type undecodable struct{ err error }

func (e *undecodable) Error() string { return ErrUndecodable.Error() + ": " + e.err.Error() }
func (e *undecodable) Unwrap() error { return e.err }
func (e *undecodable) Is(target error) bool {
	return target == ErrUndecodable
}

// PanicError is a panic recovered from a handler: the value it panicked
// with and the stack at the panic. Package consume answers a handler's
// panic with one (consume.ReasonHandlerError).
//
// It is also how fn reports to Do a panic it recovered itself, to settle
// the key otherwise than by the release a panic gets (oncehttp's
// middleware holds the key of a panicking handler and answers 500): an
// error from fn whose chain holds a *PanicError makes the call traced as
// panicked (Panicked on the tracer's EventDoEnd), and observers find it in the
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

// As matches no target. It keeps the class marks inside the panic's value
// from speaking for an error that reaches the panic through an As method,
// as they speak for no other (see WithClassifier).
func (e *PanicError) As(target any) bool { return meetMark(target, e) }
