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
// # What the first caller receives
//
// The first caller receives exactly what every replay receives: fn's value
// after the codec's round trip (unless the codec declares itself lossless:
// see Codec), and a final error — one marked with Final, or classified
// final — in its stored form: its full text, and its type when it is
// registered with RegisterError (wrapped in a *StoredError with the
// original text when the registered error was wrapped), else a
// *StoredError. Errors marked with Hold keep the key held (in progress,
// Held) for the hold period (WithHoldFor). Every other error, context
// cancellation included, is retryable: it is not stored, the claim is
// released so the next call runs fn again, and Do returns it as fn
// returned it.
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
// every call in a start/end pair of Events whose context the call runs
// under (package onceotel puts an OpenTelemetry span there).
//
// # Panics
//
// A panic in fn, in the classifier, or in the observer on EventClaimed
// (before fn runs) releases the claim and stops renewal before Do panics
// with the same value: no renewal is sent after Do returns or panics. Once
// fn has returned, its effect has happened, so a panic in a hook changes
// nothing of how the key is settled, and Do panics with its value after
// the key is settled: an outcome whose encoding panics (the codec, a
// value's MarshalJSON, a final error's Error or ErrorCode), or whose
// decoding for the first answer does, is stored as an outcome the codec
// refuses is, as a final error saying so ("once: outcome cannot be
// encoded: panic: …"); a held error whose Error or ErrorCode panics holds
// the key with a placeholder text; a panicking observer leaves the outcome
// recorded, held or released as it would have been.
//
// # Leases and fencing
//
// Every claim has a random owner token and a lease, renewed while fn runs.
// Every write after the claim is conditional on the token, so a stale owner
// that wakes after a takeover gets ErrLeaseLost and overwrites nothing. All
// lease and expiry arithmetic uses the store's clock. If the claim is lost
// (taken over by another caller after a pause longer than the lease), or
// renewals cannot prove it in time (WithLease says when), fn's context is
// cancelled with cause ErrLeaseLost, and a Do whose claim was taken over
// returns ErrLeaseLost without overwriting the new owner's outcome. If the
// store cannot record fn's outcome, or cannot hold the key after a held
// error, Do returns the value (and fn's error) with ErrOutcomeUnrecorded,
// and the key runs fn again after its lease.
//
// # When Do returns
//
// Once fn has returned, Do waits for nothing but the store write that
// settles the claim and the hooks it calls (tracer, observer, codec,
// classifier, a held error's methods): a renewal in flight then is
// abandoned, never waited for, and fenced by the owner token (a Renew
// writes nothing to a completed, held or released claim). The write is a
// Complete or a Hold tried at most three times, or one Release, each
// attempt on a context detached from ctx's cancellation whose deadline is
// at most a fixed write timeout and, for a Complete or a Hold, at most two
// thirds of the lease after the attempt starts. With a store that returns
// when its context ends, Do therefore returns within three such deadlines
// and two short pauses of fn's end, plus the time its hooks take, whatever
// a renewal in flight does. A Renew that ignores its context may outlive
// Do, on its own goroutine, until the store returns it; its result is
// discarded, and it reports no event.
//
// # Steps
//
// An intent of several effects checkpoints each one with Step (StepTx for
// database writes, StepAtMostOnce for an effect that cannot be repeated): a
// later execution of the intent resumes from the checkpoints, which the
// claim returns, instead of repeating the effects already made.
//
// # Outbound calls
//
// DerivedKey makes the key to send downstream from a business identifier
// (DerivedKey("order", publicID) is "order-<publicID>"), the same on every
// attempt of every retry of every restart.
package once
