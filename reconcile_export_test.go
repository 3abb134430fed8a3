package once

import "time"

// ReconcilerWithClock replaces the clock r's backoff reads, for tests
// that step it.
func ReconcilerWithClock[T any](r *Reconciler[T], now func() time.Time) { r.now = now }

// ReconcilerBackoffs reports how many keys r remembers a failure of.
func ReconcilerBackoffs[T any](r *Reconciler[T]) int { return len(r.backoffs) }

// The Reconciler's backoff bounds, for the tests that reach them.
const (
	ReconcileBackoffMin    = reconcileBackoffMin
	ReconcileBackoffMax    = reconcileBackoffMax
	MaxReconcileBackoffs   = maxReconcileBackoffs
	MaxReconcileKeptLeases = maxReconcileKeptLeases
)
