package once

import (
	"context"
	"time"
)

// EventKind names what happened in a call.
type EventKind uint8

const (
	// EventClaimed: the call won the claim (TookOver reports a takeover of
	// an expired lease). Duration is the claim's store round trip.
	EventClaimed EventKind = iota + 1
	// EventReplayed: the stored outcome was returned; Err is the replayed
	// final error, if any. Duration is the claim's store round trip.
	EventReplayed
	// EventInProgress: another call holds a live claim.
	EventInProgress
	// EventKeyReused: the key is bound to another fingerprint.
	EventKeyReused
	// EventExecuted: fn returned. Duration is fn's run time; Err and Class
	// are fn's error and its class.
	EventExecuted
	// EventRecorded: the outcome was stored. Duration is the completion's
	// store time, retries included.
	EventRecorded
	// EventReleased: the claim was released after a retryable error or a
	// panic.
	EventReleased
	// EventHeld: the claim was kept until its lease ends after a held error.
	EventHeld
	// EventRenewed: the lease was renewed while fn ran.
	EventRenewed
	// EventLeaseLost: the claim was lost to another owner, or could not be
	// proven for two thirds of a lease.
	EventLeaseLost
	// EventUnrecorded: fn finished but its outcome could not be stored.
	EventUnrecorded
	// EventStoreError: a store operation (Op) failed with Err.
	EventStoreError
)

var eventNames = [...]string{
	EventClaimed: "claimed", EventReplayed: "replayed", EventInProgress: "in_progress",
	EventKeyReused: "key_reused", EventExecuted: "executed", EventRecorded: "recorded",
	EventReleased: "released", EventHeld: "held", EventRenewed: "renewed",
	EventLeaseLost: "lease_lost", EventUnrecorded: "unrecorded", EventStoreError: "store_error",
}

// String returns the event's snake_case name, e.g. "in_progress".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

// Event describes one step of a call, for metrics, traces and logs.
type Event struct {
	Kind  EventKind
	Scope string
	// Key is the idempotency key in clear. Keys can be guessable or carry
	// personal data: observers should hash or drop them before export.
	Key string
	// Op is the store operation of EventStoreError: "claim", "complete",
	// "renew", "release".
	Op string
	// Duration is the store or fn time the kind describes; zero if none.
	Duration time.Duration
	// Class is fn's error class on EventExecuted.
	Class Class
	// Err is the error of the event, if any.
	Err error
	// TookOver reports, on EventClaimed, a takeover of an expired lease.
	TookOver bool
}

// Observer receives the events of every call. It runs synchronously on the
// call's goroutine (or the renewal timer's) and must be fast and safe for
// concurrent use. ctx is the call's context.
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
