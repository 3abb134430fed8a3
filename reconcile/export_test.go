package reconcile

import "time"

// WithClock replaces the clock r's backoff reads, for tests that step it.
func WithClock[T any](r *Job[T], now func() time.Time) { r.now = now }

// Backoffs reports how many keys r remembers a failure of.
func Backoffs[T any](r *Job[T]) int { return len(r.backoffs) }

// The backoff bounds, for the tests that reach them.
const (
	BackoffMin    = backoffMin
	BackoffMax    = backoffMax
	MaxBackoffs   = maxBackoffs
	MaxKeptLeases = maxKeptLeases
)
