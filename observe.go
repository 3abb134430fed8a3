package once

import (
	"context"
	"time"
)

// EventKind names what happened in a call.
type EventKind uint8

const (
	// EventClaimed: the call won the claim (TookOver reports a takeover of
	// an expired lease). Op "claim".
	EventClaimed EventKind = iota + 1
	// EventReplayed: the stored outcome was returned; FnErr is the
	// replayed final error, if any, and Err a decode failure
	// (ErrUndecodable), if any. Op "claim".
	EventReplayed
	// EventInProgress: another call holds a live claim. Op "claim".
	EventInProgress
	// EventKeyReused: the key is bound to another fingerprint. Op "claim".
	EventKeyReused
	// EventExecuted: fn returned. FnTime is its run time; FnErr its error
	// without a class marker, and Class that error's class (a panic fn
	// recovered itself is a *PanicError in FnErr's chain).
	EventExecuted
	// EventRecorded: the outcome was stored. Op "complete"; StoreTime
	// includes the retries.
	EventRecorded
	// EventReleased: the claim was released after a retryable error or a
	// panic. Op "release".
	EventReleased
	// EventHeld: the key is held for the hold period (WithHoldFor) after a
	// held error (FnErr, Class ClassHold). Op "hold"; StoreTime includes
	// the retries. Err is set if the key could not be held: ErrLeaseLost
	// (the claim had been taken over), or the last store failure when every
	// attempt failed (each reported by an EventStoreError).
	EventHeld
	// EventRenewed: the lease was renewed. Op "renew".
	EventRenewed
	// EventLeaseLost: the claim was lost to another owner, or could not be
	// proven: a renewal failed two thirds of a lease after the last proof,
	// or none succeeded before the watchdog's deadline (WithLease); Err is
	// ErrLeaseLost. Op "renew" or "complete": the operation that found it.
	EventLeaseLost
	// EventUnrecorded: fn finished but its outcome could not be stored; Err
	// is the last store failure. Op "complete".
	EventUnrecorded
	// EventStoreError: the store operation Op failed with Err (a failed
	// completion or hold attempt that a retry may still recover, for
	// example).
	EventStoreError
	// EventResolved: a reconcile.Job or Resolve stored the real outcome of a
	// key (FnErr is the final error it stored, if any). Op "resolve".
	EventResolved
	// EventReconciled: a reconcile.Job asked about a held key and left it
	// held (the service did not know yet; Err is its Check's
	// error, if it failed).
	EventReconciled
	// EventStep: a step's function ran (Step, StepTx). Step is its name,
	// FnTime its run time, FnErr its error and Class that error's class;
	// Op "checkpoint" and StoreTime when its outcome was checkpointed. An
	// at-most-once step found interrupted reports Class ClassHold and an
	// FnErr that matches ErrStepInterrupted, with no FnTime.
	EventStep
	// EventStepReplayed: a step's checkpointed outcome was returned
	// without running its function; FnErr is the final error, if any, and
	// Err a decode failure (ErrUndecodable), if any.
	EventStepReplayed
	// EventStepUnmatched: the intent's fn returned and no step of this
	// execution used the checkpoint called Step (a step renamed or
	// removed since it was written). The checkpoint is kept.
	EventStepUnmatched
	// EventDoStart: a call starts, before any validation or store call;
	// the Tracer's TraceDoStart gets it (Scope and Key), observers never.
	EventDoStart
	// EventDoEnd: a call returns or panics; the Tracer's TraceDoEnd gets
	// it, observers never. Status is that of the call's Outcome, Err the
	// error the call returned (fn's own included), and Panicked reports a
	// panic.
	EventDoEnd
)

var eventNames = [...]string{
	EventClaimed: "claimed", EventReplayed: "replayed", EventInProgress: "in_progress",
	EventKeyReused: "key_reused", EventExecuted: "executed", EventRecorded: "recorded",
	EventReleased: "released", EventHeld: "held", EventRenewed: "renewed",
	EventLeaseLost: "lease_lost", EventUnrecorded: "unrecorded", EventStoreError: "store_error",
	EventResolved: "resolved", EventReconciled: "reconciled",
	EventStep: "step", EventStepReplayed: "step_replayed", EventStepUnmatched: "step_unmatched",
	EventDoStart: "do_start", EventDoEnd: "do_end",
}

// String returns the event's snake_case name, e.g. "in_progress".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

// Event describes one step of a call, for metrics, traces and logs. Each
// field means one thing, and is zero when the kind does not set it.
type Event struct {
	Kind  EventKind
	Scope string
	// Key is the idempotency key in clear. Keys can be guessable or carry
	// personal data: observers should hash or drop them before export.
	Key string
	// Op is the store operation the event reports: "claim", "complete",
	// "renew", "release", "hold", "resolve" or "checkpoint" (see each
	// kind); empty on EventExecuted, which involves no store call.
	Op string
	// Step is the step's name on the step events, and on the
	// EventStoreError and EventLeaseLost of a checkpoint.
	Step string
	// StoreTime is the time Op took, measured around the store call(s);
	// zero without Op.
	StoreTime time.Duration
	// FnTime is fn's run time, on EventExecuted.
	FnTime time.Duration
	// Class is the class of FnErr, on EventExecuted with an error and on
	// EventHeld.
	Class Class
	// Status is the status of the call's Outcome, on EventDoEnd.
	Status Status
	// FnErr is the error part of the call's answer as fn gave it: fn's
	// error on EventExecuted and EventHeld, the replayed final error on
	// EventReplayed.
	FnErr error
	// Err is, on the kinds observers see, a failure of the machinery,
	// never fn's: the store's error on EventStoreError and
	// EventUnrecorded, and on an EventHeld whose hold failed (ErrLeaseLost
	// if the claim had been taken over), ErrLeaseLost on EventLeaseLost, a
	// decode failure on EventReplayed. On EventDoEnd it is the error the
	// call returned, whichever it was (fn's own included).
	Err error
	// TookOver reports, on EventClaimed, a takeover of an expired lease.
	TookOver bool
	// Panicked reports, on EventDoEnd, that fn or a hook panicked: either
	// the call is panicking, and the panic continues after TraceDoEnd; or
	// fn ran in this call and returned an error whose chain holds a
	// *PanicError, a panic it recovered itself (as oncehttp's middleware
	// does, to hold the key and answer 500; see PanicError), and the call
	// returned Err.
	Panicked bool
}

// Observer receives the events of every call, of every kind but
// EventDoStart and EventDoEnd (the Tracer's). It runs synchronously on the
// call's goroutine (or a renewal timer's) and must be fast and safe for
// concurrent use. A slow one delays the call's own events, never its
// renewals nor the write of its outcome: renewal events are emitted on the
// renewal timer's goroutine, in order, and those not yet handed to the
// observer when the outcome's write starts are dropped, so none is handed
// over after that (one the observer is still handling then may end after
// the call returns). ctx is the call's context (as returned by the
// Tracer's TraceDoStart, when one is set; renewal events get it without
// its cancellation).
//
// An observer must not panic. If it does on the call's goroutine, the
// panic propagates out of Do: on EventClaimed (fn does not run) after the
// claim is released; on a later event, after the claim is settled as it
// would have been without the panic (recorded, held or released: the
// observer's later events are still sent). On the renewal timer's
// goroutine, it is recovered and the event dropped.
type Observer func(ctx context.Context, e Event)

// WithObserver adds an observer; each added observer sees every event. The
// default is none, and then no event is built and no clock is read.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o == nil {
			return
		}
		if prev := c.observer; prev != nil {
			c.observer = func(ctx context.Context, e Event) { prev(ctx, e); o(ctx, e) }
			return
		}
		c.observer = o
	}
}

// Emit hands e to k's observers (WithObserver), as each call does with
// its own events, for machinery beside the core whose steps belong in the
// same stream. A panic in an observer propagates, as it does out of Do.
func (k *Keeper) Emit(ctx context.Context, e Event) {
	if k != nil {
		k.cfg.emit(ctx, e)
	}
}

// since returns the time elapsed from start when an observer is set.
func (c *config) since(start time.Time) time.Duration {
	if start.IsZero() {
		return 0
	}
	return time.Since(start)
}

// clock returns now when an observer is set, so unobserved calls never read
// the clock.
func (c *config) clock() time.Time {
	if c.observer == nil {
		return time.Time{}
	}
	return time.Now()
}

func (c *config) emit(ctx context.Context, e Event) {
	if c.observer != nil {
		c.observer(ctx, e)
	}
}
