package once

import "time"

// Outcome is the full answer of DoOutcome: the value and how the call
// ended.
type Outcome[T any] struct {
	// Value is the stored value, decoded: on a replay, and on the call
	// that ran fn too (fn's value after the codec's round trip; fn's value
	// as it is with a lossless Codec, with an *OutcomeTooLargeError, or when the
	// outcome could not be recorded). It is T's zero value with a final
	// error.
	Value T
	// Status says how the call ended: whether fn ran, and what became of
	// the key.
	Status Status
	// RetryAfter is, when Status is Held, how long the key stays held: the
	// hold period (WithHoldFor), after which a call runs fn again unless
	// the key was resolved. It is zero otherwise.
	RetryAfter time.Duration
}

// Status is how a call ended. The zero Status means that the call ended
// before fn ran, with no stored answer to return: its error says why (an
// *InvalidInputError, ErrKeyReused, an *InProgressError, a *StoreError,
// ErrUndecodable, or the context's error while waiting).
//
// Unrecorded, HoldUnrecorded and LeaseLost are the core's own failures,
// never read from fn's error: an fn whose error wraps ErrOutcomeUnrecorded
// or ErrLeaseLost (from a nested Do) ends Released, Held or Recorded like
// any other.
type Status uint8

const (
	// Replayed: the answer (value or final error) came from the store and
	// fn did not run in this call. HTTP handlers answer it with
	// "Idempotent-Replayed: true".
	Replayed Status = iota + 1
	// Recorded: fn ran in this call and its value or final error is
	// stored; every retry of the key gets the same answer.
	Recorded
	// Held: fn ran and returned a held error (Hold, or ClassHold): the key
	// is held for the hold period (WithHoldFor) and nothing is stored.
	Held
	// Released: fn ran and returned a retryable error: nothing is stored
	// and the claim is released, so the next call runs fn again.
	Released
	// Unrecorded: fn ran and finished with a value or final error, but the
	// store failed to record it (the error carries ErrOutcomeUnrecorded):
	// the key runs fn again after its lease.
	Unrecorded
	// HoldUnrecorded: fn ran and returned a held error, but the store
	// failed to hold the key (the error carries ErrOutcomeUnrecorded): the
	// key is not held and runs fn again after its lease.
	HoldUnrecorded
	// LeaseLost: fn ran and its claim was taken over (the renewal, the
	// completion or the hold found another owner), so nothing of this call
	// was stored (the error carries ErrLeaseLost).
	LeaseLost
)

var statusNames = [...]string{
	0: "not run", Replayed: "replayed", Recorded: "recorded", Held: "held", Released: "released",
	Unrecorded: "unrecorded", HoldUnrecorded: "hold unrecorded", LeaseLost: "lease lost",
}

// String returns the status in words, e.g. "replayed"; "not run" for the
// zero Status.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}
