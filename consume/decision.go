package consume

import "time"

// Action is what a message consumer does with a message.
type Action uint8

const (
	// Ack: the message is done. Acknowledge it (NATS Ack, AMQP Ack) and do
	// not deliver it again.
	Ack Action = iota + 1
	// RetryLater: the message is not done yet and must be delivered again,
	// preferably after Decision.RetryAfter (NATS NakWithDelay, AMQP Nack
	// with requeue).
	RetryLater
	// DeadLetter: the message can never be processed as it is. Move it to a
	// dead-letter queue (NATS Term, AMQP Nack without requeue) so that a
	// person looks at it; redelivering it would fail the same way forever.
	DeadLetter
)

// String returns "ack", "retry later" or "dead letter".
func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case RetryLater:
		return "retry later"
	case DeadLetter:
		return "dead letter"
	default:
		return "unknown action"
	}
}

// Reason says why a decision has its Action. Every Reason belongs to
// exactly one Action; see the package documentation for the table.
type Reason string

// The reasons of the decisions.
const (
	ReasonDone          Reason = "done"                 // Ack: the handler ran now and its answer (success, or final error in Err) is recorded
	ReasonReplayed      Reason = "replayed"             // Ack: the handler ran before; its answer (success, or final error in Err) is replayed
	ReasonUnrecorded    Reason = "outcome unrecorded"   // Ack: the handler finished but the store did not record it
	ReasonInProgress    Reason = "in progress"          // RetryLater: another consumer holds a live claim on the key, or the key is held
	ReasonHeld          Reason = "held"                 // RetryLater: the handler returned a Hold error; the key is held
	ReasonHandlerError  Reason = "handler error"        // RetryLater: the handler returned a retryable error, or panicked (Err is a *once.PanicError)
	ReasonLeaseLost     Reason = "lease lost"           // RetryLater: the claim was taken over while the handler ran
	ReasonStoreDown     Reason = "store unavailable"    // RetryLater: the store failed; nothing of the handler's is recorded
	ReasonCanceled      Reason = "canceled"             // RetryLater: the consumer's context ended before the handler ran, or while it ran and it returned the context's error
	ReasonMisconfigured Reason = "misconfigured"        // RetryLater: the scope, context, handler or fingerprint is invalid
	ReasonKeyReused     Reason = "key reused"           // DeadLetter: the key is bound to another payload
	ReasonInvalidKey    Reason = "invalid key"          // DeadLetter: the key is missing, too long or malformed
	ReasonUndecodable   Reason = "undecodable"          // DeadLetter: the stored outcome cannot be decoded
	ReasonRejected      Reason = "rejected"             // DeadLetter: the handler returned a Reject error
	ReasonTooLarge      Reason = "outcome too large"    // DeadLetter: Value's value is over the outcome cap
	ReasonExhausted     Reason = "deliveries exhausted" // DeadLetter: a broker adapter's delivery limit was reached while the handler kept failing
)

// HeldRedelivery bounds the RetryAfter of a message whose key is held,
// by this delivery (ReasonHeld) or another (ReasonInProgress): its hold
// may last until resolved, and a redelivery every HeldRedelivery at most
// learns the resolved outcome in time.
const HeldRedelivery = time.Minute

// StoreRetryAfter is the RetryAfter hint of a decision taken because the
// store could not be reached.
const StoreRetryAfter = time.Second

// Decision is what to do with a message, and why.
type Decision struct {
	// Action is what the consumer does with the message.
	Action Action
	// Reason says why; it belongs to Action.
	Reason Reason
	// RetryAfter hints when to deliver the message again when Action is
	// RetryLater; zero means no hint (use the broker's own redelivery
	// delay). It is zero for the other actions.
	RetryAfter time.Duration
	// Err is the error behind the decision: the handler's error (first run
	// or replayed final error), the panic as a *once.PanicError, or the
	// failure of the store or of validation. It is nil for a success done
	// or replayed.
	Err error
}

// String describes the decision for logs, without message data.
func (d Decision) String() string {
	s := d.Action.String() + " (" + string(d.Reason) + ")"
	if d.Action == RetryLater && d.RetryAfter > 0 {
		s += " after " + d.RetryAfter.String()
	}
	return s
}
