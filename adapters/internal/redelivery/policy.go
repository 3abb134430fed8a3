package redelivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stagedoor/once/consume"
)

// Policy is how a broker adapter paces the redelivery of a message whose
// decision is RetryLater, and when it gives up on one: the one policy of
// onceamqp, oncenats and oncewatermill, each of which only maps the paced
// decision to its broker's calls.
type Policy struct {
	// Adapter prefixes the error of an exhausted message ("onceamqp").
	Adapter string
	// Backoff is the wait of a failure without a RetryAfter hint on the
	// first delivery, doubled for every further one; not positive: none.
	Backoff time.Duration
	// Limit caps every wait when positive; otherwise a backoff is 0 and
	// a key in progress waits its owner's lease uncapped.
	Limit time.Duration
	// MaxDeliveries, when positive, dead-letters a message whose handler
	// failed (HandlerFailed) on its MaxDeliveries-th counted delivery.
	MaxDeliveries int
	// ShutdownCap, when positive, caps the wait of a shutdown further.
	ShutdownCap time.Duration
	// Counted names what the count n of Pace and Exhausted counts in the
	// error of an exhausted message; "delivery" when empty.
	Counted string
}

// Pace returns dec, the decision for the n-th delivery (1 on the first)
// of a message handled under ctx, with the limit and the waits of p
// applied: a handler failure on the MaxDeliveries-th delivery is
// dead-lettered (consume.ReasonExhausted); a key in progress waits its
// owner's lease left (InProgressWait); a shutdown waits ShutdownWait,
// whatever n, since nothing failed; a store outage waits
// consume.StoreRetryAfter doubled per earlier delivery; a RetryLater
// without a hint waits Backoff doubled per earlier delivery. A ctx past
// its deadline (a per-message timeout) is no shutdown: it is a handler
// failure, backed off and limited as one. Every wait is at most Limit.
// The decision's RetryAfter is the wait.
func (p Policy) Pace(ctx context.Context, dec consume.Decision, n uint64) consume.Decision {
	if dec.Action != consume.RetryLater {
		return dec
	}
	if ex, ok := p.Exhausted(ctx, dec, n); ok {
		return ex
	}
	switch {
	case dec.Reason == consume.ReasonInProgress:
		// Every redelivery is a counted delivery: wait out the owner's
		// lease (or the hold), not the core's one-second hint.
		dec.RetryAfter = InProgressWait(dec)
	case dec.Reason == consume.ReasonCanceled && !timedOut(ctx):
		dec.RetryAfter = p.ShutdownWait()
	case dec.Reason == consume.ReasonStoreDown:
		dec.RetryAfter = Backoff(max(dec.RetryAfter, consume.StoreRetryAfter), p.Limit, n)
	case dec.RetryAfter == 0:
		dec.RetryAfter = Backoff(p.Backoff, p.Limit, n)
	}
	if p.Limit > 0 {
		dec.RetryAfter = min(dec.RetryAfter, p.Limit)
	}
	dec.RetryAfter = max(dec.RetryAfter, 0)
	return dec
}

// ShutdownWait is the wait of a redelivery once the consumer's context is
// cancelled: the first delivery's backoff, at most ShutdownCap. Nothing
// failed, so it does not grow with the delivery count (that would park a
// message during a rolling restart), and it is not zero, so that a
// consumer still receiving does not redeliver at the broker's speed.
func (p Policy) ShutdownWait() time.Duration {
	w := Backoff(p.Backoff, p.Limit, 1)
	if p.ShutdownCap > 0 {
		w = min(w, p.ShutdownCap)
	}
	return w
}

// Exhausted returns the dead-letter decision (consume.ReasonExhausted) of
// dec when its handler failed (HandlerFailed) on the n-th counted
// delivery and n has reached MaxDeliveries, and reports whether it did.
func (p Policy) Exhausted(ctx context.Context, dec consume.Decision, n uint64) (consume.Decision, bool) {
	if p.MaxDeliveries <= 0 || n < uint64(p.MaxDeliveries) || !HandlerFailed(ctx, dec) {
		return dec, false
	}
	counted := p.Counted
	if counted == "" {
		counted = "delivery"
	}
	return consume.Decision{Action: consume.DeadLetter, Reason: consume.ReasonExhausted,
		Err: fmt.Errorf("%s: %s %d of at most %d, %s: %w", p.Adapter, counted, n, p.MaxDeliveries, dec.Reason, dec.Err)}, true
}

// HandlerFailed reports a decision that counts toward MaxDeliveries: the
// handler returned a retryable error or panicked, or ran past ctx's
// deadline (a per-message timeout: the core answers consume.ReasonCanceled
// for any ended context, and a shutdown cancels, it sets no deadline).
func HandlerFailed(ctx context.Context, dec consume.Decision) bool {
	switch dec.Reason {
	case consume.ReasonHandlerError:
		return true
	case consume.ReasonCanceled:
		return timedOut(ctx)
	default:
		return false
	}
}

func timedOut(ctx context.Context) bool {
	return ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
}
