package onceamqp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/stagedoor/once/adapters/internal/redelivery"
	"github.com/stagedoor/once/consume"
)

// DefaultRequeueBackoff is the wait before the requeue of a delivery's
// first failure when the decision gives no RetryAfter hint.
const DefaultRequeueBackoff = 250 * time.Millisecond

// pace applies the delivery limit and the backoff of cfg to dec, the
// decision for delivery d: a handler that failed (error or panic) on the
// MaxDeliveries-th delivery dead-letters it; an in-progress key waits the
// owner's lease left (a held key the hold's); a store outage waits
// consume.StoreRetryAfter doubled per earlier delivery; a RetryLater without
// a hint waits RequeueBackoff doubled per earlier delivery. Every wait is
// at most MaxRequeueDelay, and the decision's RetryAfter is the wait that
// Settle applies. A shutdown (ReasonCanceled) waits shutdownWait; one
// whose ctx is past its deadline (a per-message timeout) is no shutdown:
// it is a handler failure, backed off and limited as one.
func pace(ctx context.Context, d *amqp.Delivery, dec consume.Decision, cfg *Config) consume.Decision {
	if dec.Action != consume.RetryLater || d == nil {
		return dec
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	n := Deliveries(d)
	timedOut := dec.Reason == consume.ReasonCanceled && ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	if c.MaxDeliveries > 0 && n >= int64(c.MaxDeliveries) && (dec.Reason == consume.ReasonHandlerError || timedOut) {
		return consume.Decision{Action: consume.DeadLetter, Reason: consume.ReasonExhausted,
			Err: fmt.Errorf("onceamqp: delivery %d of at most %d, %s: %w", n, c.MaxDeliveries, dec.Reason, dec.Err)}
	}
	limit := maxRequeueDelay(cfg)
	switch {
	case dec.Reason == consume.ReasonInProgress:
		// Every requeue is a counted delivery: wait out the owner's lease
		// (or the hold) up to the cap, not the core's one-second hint.
		dec.RetryAfter = redelivery.InProgressWait(dec)
	case dec.Reason == consume.ReasonCanceled && !timedOut:
		// A shutdown: nothing failed, so no backoff by the delivery count,
		// and a short wait (settle's grace once ctx is cancelled) so that a
		// consumer still receiving does not requeue at broker speed.
		dec.RetryAfter = shutdownWait(cfg)
	case dec.Reason == consume.ReasonStoreDown:
		dec.RetryAfter = redelivery.Backoff(max(dec.RetryAfter, consume.StoreRetryAfter), limit, uint64(n))
	case dec.RetryAfter == 0:
		base := c.RequeueBackoff
		if base == 0 {
			base = DefaultRequeueBackoff
		}
		dec.RetryAfter = redelivery.Backoff(base, limit, uint64(n))
	}
	// Report the wait Settle applies, not the hint.
	dec.RetryAfter = max(min(dec.RetryAfter, limit), 0)
	return dec
}

// Deliveries is the number of times d has been delivered, 1 on the first
// delivery: the x-delivery-count header plus one (quorum queues count
// every return of a delivery in it); without the header 2 for a delivery
// flagged Redelivered, else 1 (classic queues keep no count).
func Deliveries(d *amqp.Delivery) int64 {
	var count int64
	switch v := d.Headers["x-delivery-count"].(type) {
	case int64:
		count = v
	case int32:
		count = int64(v)
	case int:
		count = int64(v)
	case int16:
		count = int64(v)
	case int8:
		count = int64(v)
	case uint8:
		count = int64(v)
	case uint16:
		count = int64(v)
	case uint32:
		count = int64(v)
	}
	switch {
	case count > 0 && count < math.MaxInt64:
		return count + 1
	case count > 0:
		return count
	case d.Redelivered:
		return 2
	default:
		return 1
	}
}
