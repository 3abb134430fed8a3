// Package consume runs message handlers exactly once per message key, on
// top of once.DoOutcome and once.DoTxOutcome, and tells the consumer what
// to do with each message: acknowledge it, deliver it again later, or
// move it to a dead-letter queue.
//
//	d := consume.Do(ctx, keeper.Scope("billing-workers"), msg.ID, hashers.Parts(msg.Body), handle)
//	switch d.Action {
//	case consume.Ack: // msg.Ack()
//	case consume.RetryLater: // msg.NakWithDelay(d.RetryAfter)
//	case consume.DeadLetter: // msg.Term()
//	}
//
// The broker adapters (oncenats, onceamqp, oncewatermill) make these calls
// and settle the message for you.
//
// # Decisions
//
//	what happened                                     Action      Reason
//	handler ran now, success or final error recorded  Ack         ReasonDone (a final error in Err)
//	key done before, its answer replayed              Ack         ReasonReplayed (a final error in Err)
//	handler finished, store failed to record it       Ack         ReasonUnrecorded
//	another consumer holds a live claim on the key    RetryLater  ReasonInProgress (RetryAfter: lease left, at most 1s;
//	                                                                                   held key: hold left, at most HeldRedelivery)
//	handler returned a Hold error                     RetryLater  ReasonHeld (RetryAfter: the hold, once.WithHoldFor,
//	                                                                             at most HeldRedelivery)
//	handler returned a retryable error, or panicked   RetryLater  ReasonHandlerError (a panic: Err is a *once.PanicError)
//	claim lost to another consumer while running      RetryLater  ReasonLeaseLost
//	store unreachable at the claim (handler not run)  RetryLater  ReasonStoreDown (RetryAfter: StoreRetryAfter)
//	consumer's context ended before the handler ran   RetryLater  ReasonCanceled
//	  or while it ran, and it returned ctx's error
//	invalid scope, nil context or handler, long fp    RetryLater  ReasonMisconfigured
//	key bound to another payload (fingerprint)        DeadLetter  ReasonKeyReused
//	key empty, over 255 bytes, bad UTF-8, control     DeadLetter  ReasonInvalidKey
//	stored outcome cannot be decoded                  DeadLetter  ReasonUndecodable
//	handler returned a Reject error                   DeadLetter  ReasonRejected
//	Value: value over the outcome cap                 DeadLetter  ReasonTooLarge (first run and replays)
//
// The decision is read from how the core says the call ended
// (once.Outcome.Status), never from the handler's error: a handler error
// that wraps once.ErrOutcomeUnrecorded or once.ErrLeaseLost (a nested
// Do's failure) is a handler error like any other, and a classifier (once.WithClassifier) that
// is not a pure function (one that samples, counts or trips a breaker)
// cannot make the decision say ReasonHeld for a claim the core released,
// or the reverse. An unrecorded outcome is acknowledged because the
// handler's effect has happened: redelivering the message would repeat
// it. A lost lease is not, because the consumer that took the key over
// may still fail; the redelivery then replays its outcome. A
// misconfiguration is retried, not dead-lettered, since the message is
// not at fault. A Hold error whose hold the store failed to write is
// still ReasonHeld, with an Err that carries once.ErrOutcomeUnrecorded:
// the key is not held, it stays claimed until its lease ends and then
// runs the handler again, as the redelivery does (the outcome is unknown,
// so acknowledging could lose the message).
//
// # Shutdown and timeouts
//
// A handler that returns the error of the consumer's ctx, or one wrapping
// it (or its cause), after ctx ended is answered ReasonCanceled, not
// ReasonHandlerError: a consumer shutting down is not a failure of the
// message. A deadline set on that ctx therefore counts as canceled too; a
// handler's own timeout belongs inside the handler (context.WithTimeout
// of the handler's ctx), whose expiry is a handler error. The broker
// adapters tell the two apart by ctx's error: a cancelled ctx is a
// shutdown, never counted toward MaxDeliveries nor dead-lettered, while a
// ctx past its deadline (a per-message timeout around the adapter's call,
// a Watermill middleware.Timeout) is backed off and counted as a handler
// failure, so that a handler that always outlives it is not redelivered
// forever.
//
// # Broker adapters
//
// Do never answers ReasonExhausted: a broker adapter turns a handler
// error or panic into it when the message has reached the adapter's
// delivery limit, and backs off the redelivery of a RetryLater without a
// RetryAfter hint by the delivery count, so that a poison message is
// neither redelivered at broker speed nor forever. Since every
// redelivery spends one of the broker's deliveries, the adapters also
// wait out an in-progress key's lease (once.InProgressError's
// LeaseRemaining) rather than the one-second RetryAfter, and back off a
// store outage by the delivery count.
package consume
