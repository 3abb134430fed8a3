// Package once makes a side effect happen once per intent, however often the
// intent is retried: an HTTP POST retried by a browser, a queue message
// redelivered, a cron job fired on two instances, a webhook sent twice, a
// call to a payment provider retried after a timeout.
//
// The design is a unique constraint with a stored response. Do claims
// (scope, key) atomically in a store, runs fn, stores its typed outcome and
// replays that outcome to every retry with the same key.
//
//	k := once.New(nil) // in-memory store; use backends/postgres or backends/redisstore across processes
//	order, err := once.Do(ctx, k.Scope(userID), idempotencyKey, fingerprint,
//		func(ctx context.Context) (Order, error) { return placeOrder(ctx, req) })
//
// # What a call receives
//
//   - First call with a key: fn runs; its value or final error is stored.
//   - Same key, same fingerprint, completed: the stored outcome; fn does not run.
//   - Same key, another fingerprint: ErrKeyReused (HTTP 422), never the stored outcome.
//   - Same key while the first call runs: *InProgressError (ErrInProgress,
//     HTTP 409) with a retry-after hint, or the outcome with WithWait.
//   - Same key after its owner died: taken over once the lease ends; fn runs.
//   - Same key after retention (24 hours by default): a new intent.
//
// # Error classes
//
// An error returned by fn is retryable unless marked. Final(err) stores and
// replays it (a card decline); RegisterError brings its type back on a
// replay. Hold(err) leaves the outcome unknown (a timeout after the request
// left) and keeps the key held for the hold period (WithHoldFor; one lease
// by default, or until resolved); Resolve or package reconcile stores the
// real outcome later. Retry(err) and unmarked errors (ClassRetry),
// cancellations and panics in fn release the claim at once. A classifier
// (WithClassifier) returns ClassFinal, ClassRetry or ClassHold for unmarked
// errors. An error with several marks takes the most cautious of its
// outermost ones, Hold, then Retry, then Final, in Do as in Resolve (see
// WithClassifier).
//
// # Observability
//
// WithObserver receives every step of a call as an Event; WithTracer wraps
// every call in a start/end pair whose context the call runs under (package
// onceotel puts an OpenTelemetry span there).
//
// # Leases and fencing
//
// Every claim has a random owner token and a lease, renewed while fn runs.
// Every write after the claim is conditional on the token, so a stale owner
// that wakes after a takeover gets ErrLeaseLost and overwrites nothing. All
// lease and expiry arithmetic uses the store's clock. Writing the outcome
// never waits for a renewal, so Do returns within a bound of fn's end,
// whatever a renewal in flight does: Do's documentation states it.
//
// # Outbound calls
//
// DerivedKey makes the key to send downstream from a business identifier
// (DerivedKey("order", publicID) is "order-<publicID>"), the same on every
// attempt of every retry of every restart.
package once
