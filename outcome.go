package once

// Outcome is the full answer of DoOutcome: the value and how it was
// obtained.
type Outcome[T any] struct {
	// Value is fn's value, or the stored value on a replay. It is T's zero
	// value on a replayed final error.
	Value T
	// Replayed reports that the answer (value or final error) came from the
	// store and fn did not run in this call. HTTP handlers answer it with
	// "Idempotent-Replayed: true".
	Replayed bool
	// Recorded reports that the answer is stored: it was replayed, or fn
	// ran in this call and its value or final error was completed in the
	// store. A retry of the key will get the same answer.
	Recorded bool
}
