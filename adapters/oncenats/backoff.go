package oncenats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stagedoor/once/adapters/internal/redelivery"
	"github.com/stagedoor/once/consume"
)

// Defaults of the redelivery backoff.
const (
	// DefaultRetryBackoff is the Nak delay of a message's first failed
	// delivery when the decision gives no RetryAfter hint.
	DefaultRetryBackoff = time.Second
	// DefaultMaxRetryBackoff caps the doubling Nak delay.
	DefaultMaxRetryBackoff = time.Minute
)

// pace applies the delivery limit and the backoff of cfg to d, the
// decision for msg's delivery: a handler that failed (error or panic) on
// the MaxDeliveries-th delivery dead-letters the message; an in-progress
// key waits the owner's lease left (a held key the hold's, at most
// consume.HeldRedelivery), at most MaxRetryBackoff; a shutdown waits RetryBackoff
// (nothing failed); a store outage waits consume.StoreRetryAfter doubled per
// earlier delivery, and a RetryLater without a hint RetryBackoff doubled
// per earlier delivery, both at most MaxRetryBackoff. A ReasonCanceled
// whose ctx is past its deadline (a per-message timeout) is no shutdown:
// it is a handler failure, backed off and limited as one. The decision's
// RetryAfter is the delay of the Nak.
func pace(ctx context.Context, msg jetstream.Msg, d consume.Decision, cfg *Config) consume.Decision {
	if d.Action != consume.RetryLater || msg == nil {
		return d
	}
	var c Config
	if cfg != nil {
		c = *cfg
	}
	n := deliveries(msg)
	timedOut := d.Reason == consume.ReasonCanceled && ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	if c.MaxDeliveries > 0 && n >= uint64(c.MaxDeliveries) && (d.Reason == consume.ReasonHandlerError || timedOut) {
		return consume.Decision{Action: consume.DeadLetter, Reason: consume.ReasonExhausted,
			Err: fmt.Errorf("oncenats: delivery %d of at most %d, %s: %w", n, c.MaxDeliveries, d.Reason, d.Err)}
	}
	limit := orDefault(c.MaxRetryBackoff, DefaultMaxRetryBackoff)
	switch {
	case d.Reason == consume.ReasonCanceled && !timedOut:
		// A shutdown: nothing failed, so no backoff by the delivery count
		// (it would park the message up to MaxRetryBackoff during a
		// rolling restart); the first delivery's wait, so that a consumer
		// whose context ended but which still receives does not spin.
		d.RetryAfter = redelivery.Backoff(orDefault(c.RetryBackoff, DefaultRetryBackoff), limit, 1)
	case d.Reason == consume.ReasonInProgress:
		// Every Nak spends a delivery: wait out the owner's lease (or the
		// hold), not the core's one-second hint, but at most
		// MaxRetryBackoff: a Nak-ed message stays pending (it counts
		// toward the consumer's MaxAckPending) until it is redelivered,
		// and a long lease would park a duplicate for all of it.
		d.RetryAfter = redelivery.InProgressWait(d)
		if limit > 0 {
			d.RetryAfter = min(d.RetryAfter, limit)
		}
	case d.Reason == consume.ReasonStoreDown:
		// A store outage may last: back off from StoreRetryAfter per
		// delivery, at most MaxRetryBackoff.
		d.RetryAfter = redelivery.Backoff(max(d.RetryAfter, consume.StoreRetryAfter), limit, n)
	case d.RetryAfter == 0:
		d.RetryAfter = redelivery.Backoff(orDefault(c.RetryBackoff, DefaultRetryBackoff), limit, n)
	}
	return d
}

// deliveries is JetStream's delivery count of msg (1 on the first
// delivery), 1 when the metadata cannot be read.
func deliveries(msg jetstream.Msg) uint64 {
	md, err := msg.Metadata()
	if err != nil || md.NumDelivered == 0 {
		return 1
	}
	return md.NumDelivered
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
