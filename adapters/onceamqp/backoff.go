package onceamqp

import (
	"context"
	"math"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/stagedoor/once/adapters/internal/redelivery"
	"github.com/stagedoor/once/consume"
)

// DefaultRequeueBackoff is the wait before the requeue of a delivery's
// first failure when the decision gives no RetryAfter hint.
const DefaultRequeueBackoff = 250 * time.Millisecond

// pace applies the redelivery policy of cfg (see policy) to dec, the
// decision for delivery d; the decision's RetryAfter is the wait that
// Settle applies.
func pace(ctx context.Context, d *amqp.Delivery, dec consume.Decision, cfg *Config) consume.Decision {
	if d == nil {
		return dec
	}
	return policy(cfg).Pace(ctx, dec, uint64(Deliveries(d)))
}

// policy is the redelivery policy of cfg: RequeueBackoff doubled per
// delivery, every wait at most MaxRequeueDelay, a shutdown's at most
// MaxShutdownWait too, and MaxDeliveries.
func policy(cfg *Config) redelivery.Policy {
	p := redelivery.Policy{Adapter: "onceamqp", Backoff: DefaultRequeueBackoff, Limit: DefaultMaxRequeueDelay, ShutdownCap: MaxShutdownWait}
	if cfg != nil {
		if cfg.RequeueBackoff != 0 {
			p.Backoff = cfg.RequeueBackoff
		}
		if cfg.MaxRequeueDelay != 0 {
			p.Limit = cfg.MaxRequeueDelay
		}
		p.MaxDeliveries = cfg.MaxDeliveries
	}
	return p
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
