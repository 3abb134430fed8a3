package oncenats

import (
	"context"
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

// pace applies the redelivery policy of cfg to d, the decision for msg's
// delivery: RetryBackoff doubled per delivery (JetStream's NumDelivered),
// every wait at most MaxRetryBackoff, and MaxDeliveries (see
// redelivery.Policy.Pace). The decision's RetryAfter is the delay of the
// Nak.
func pace(ctx context.Context, msg jetstream.Msg, d consume.Decision, cfg *Config) consume.Decision {
	if msg == nil {
		return d
	}
	p := redelivery.Policy{Adapter: "oncenats", Backoff: DefaultRetryBackoff, Limit: DefaultMaxRetryBackoff}
	if cfg != nil {
		p.Backoff = orDefault(cfg.RetryBackoff, DefaultRetryBackoff)
		p.Limit = orDefault(cfg.MaxRetryBackoff, DefaultMaxRetryBackoff)
		p.MaxDeliveries = cfg.MaxDeliveries
	}
	return p.Pace(ctx, d, deliveries(msg))
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
