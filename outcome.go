package once

// Outcome is the full answer of DoOutcome: the value and how it was
// obtained.
type Outcome[T any] struct {
	// Value is the stored value, decoded: on a replay, and on the call
	// that ran fn too (fn's value after the codec's round trip; fn's value
	// as it is with a LosslessCodec, with ErrOutcomeTooLarge, or when the
	// outcome could not be recorded). It is T's zero value with a final
	// error.
	Value T
	// Replayed reports that the answer (value or final error) came from the
	// store and fn did not run in this call. HTTP handlers answer it with
	// "Idempotent-Replayed: true".
	Replayed bool
	// Recorded reports that the answer is stored: it was replayed, or fn
	// ran in this call and its value or final error was completed in the
	// store. A retry of the key will get the same answer.
	Recorded bool
	// Unrecorded reports that fn ran in this call and finished with a value
	// or final error, but the store failed to record it, or with a held
	// error, but the store failed to hold the key (the error carries
	// ErrOutcomeUnrecorded): the key runs fn again after its lease. It is
	// set by the core only, never inferred
	// from fn's own error: an fn whose error wraps ErrOutcomeUnrecorded
	// (from a nested Do) does not set it.
	Unrecorded bool
	// LeaseLost reports that fn ran in this call and its claim was taken
	// over (the renewal, the completion or the hold found another owner), so nothing
	// of this call was stored (the error carries ErrLeaseLost). Like
	// Unrecorded, only the core sets it.
	LeaseLost bool
}
