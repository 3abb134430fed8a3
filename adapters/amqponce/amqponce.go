package amqponce

import (
	"context"
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// DefaultMaxRequeueDelay caps the wait before a requeue.
const DefaultMaxRequeueDelay = time.Second

// Handler processes one delivery. Its error is classified as once.Do
// classifies fn's errors: wrap it with once.Final for an answer that must
// not be retried, once.Reject for a message that can never be processed,
// once.Hold for an unknown outcome.
type Handler func(ctx context.Context, d *amqp.Delivery) error

// Config tunes Process. A nil *Config means the defaults.
type Config struct {
	// Key returns the idempotency key of a delivery. An error, or an empty
	// or invalid key, dead-letters it as once.ReasonInvalidKey. Defaults to
	// MessageIDKey.
	Key func(d *amqp.Delivery) (string, error)
	// Fingerprint returns the digest the key is bound to; nil disables the
	// check. Defaults to BodyFingerprint.
	Fingerprint func(d *amqp.Delivery) once.Fingerprint
	// MaxRequeueDelay caps how long a RetryLater decision waits before it
	// requeues the delivery. Defaults to DefaultMaxRequeueDelay; a negative
	// value requeues at once.
	MaxRequeueDelay time.Duration
	// RequeueBackoff is the wait of a RetryLater decision without a
	// RetryAfter hint (a handler error or panic, a misconfiguration, a lost
	// lease): RequeueBackoff on the first delivery, doubled for every
	// further one (Deliveries), at most MaxRequeueDelay. AMQP has no
	// delayed requeue, so the wait holds the delivery (and a prefetch
	// slot) before Nack(requeue); the delivery count is only known on
	// quorum queues (x-delivery-count), classic queues tell only whether a
	// delivery is a redelivery. Defaults to DefaultRequeueBackoff; a
	// negative value requeues at once.
	RequeueBackoff time.Duration
	// MaxDeliveries, when positive, dead-letters (Nack without requeue) a
	// delivery whose handler returned a retryable error or panicked on its
	// MaxDeliveries-th delivery, as once.ReasonExhausted. It needs the
	// x-delivery-count header of a quorum queue (on a classic queue a
	// delivery counts at most 2). Set it at or below the quorum queue's
	// own delivery-limit (x-delivery-limit; RabbitMQ 4 defaults it to 20),
	// past which the broker dead-letters or drops the message itself.
	// Other retry reasons (in progress, store down, held) are never
	// dead-lettered. Defaults to 0: no limit.
	MaxDeliveries int
	// OnDecision, when set, is called after each delivery is settled, with
	// the decision and the error of the acknowledgement. Defaults to nil.
	OnDecision func(d *amqp.Delivery, dec once.Decision, ackErr error)
}

var (
	errNilDelivery = errors.New("amqponce: nil delivery")
	errNilHandler  = errors.New("amqponce: nil handler")
)

// Process runs h for d at most once per key in scope (the consumer group),
// settles d as once.Consume decides and returns the decision and the
// acknowledgement's error. It never panics: a panic in h is answered with
// a requeue (once.ReasonPanicked). A RetryLater without a hint is backed
// off by the delivery count (Config.RequeueBackoff, reported as the
// decision's RetryAfter), and a handler failing on the
// Config.MaxDeliveries-th delivery dead-letters it (once.ReasonExhausted).
func Process(ctx context.Context, scope once.Scope, d *amqp.Delivery, h Handler, cfg *Config) (once.Decision, error) {
	dec := pace(d, decide(ctx, scope, d, h, cfg), cfg)
	return dec, settleAndReport(ctx, d, dec, cfg)
}

// ProcessTx is Process with the handler inside one database transaction,
// as once.ConsumeTx runs it: begin opens the transaction and returns it
// with a store bound to it (for PostgreSQL, pool.Begin and Store.InTx);
// the claim, the handler's writes through tx and the outcome commit
// together before the delivery is acknowledged.
func ProcessTx[X once.Tx](ctx context.Context, scope once.Scope, d *amqp.Delivery, begin func(context.Context) (X, backends.Store, error), h func(ctx context.Context, tx X, d *amqp.Delivery) error, cfg *Config) (once.Decision, error) {
	var dec once.Decision
	switch key, fp, bad := identify(d, cfg); {
	case bad != nil:
		dec = *bad
	case h == nil:
		dec = once.Decision{Action: once.RetryLater, Reason: once.ReasonMisconfigured, Err: errNilHandler}
	default:
		dec = once.ConsumeTx(ctx, scope, key, fp, begin, func(ctx context.Context, tx X) error { return h(ctx, tx, d) })
	}
	dec = pace(d, dec, cfg)
	return dec, settleAndReport(ctx, d, dec, cfg)
}

// Settle acknowledges d as dec says, waiting at most maxDelay before a
// requeue (a negative maxDelay requeues at once). It returns ctx's error
// if ctx ends during the wait, after requeueing. Unlike Process, it
// applies no backoff or delivery limit.
func Settle(ctx context.Context, d *amqp.Delivery, dec once.Decision, maxDelay time.Duration) error {
	if d == nil {
		return errNilDelivery
	}
	switch dec.Action {
	case once.Ack:
		return d.Ack(false)
	case once.DeadLetter:
		return d.Nack(false, false)
	}
	var waitErr error
	if wait := min(dec.RetryAfter, maxDelay); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			waitErr = ctx.Err()
		}
	}
	return errors.Join(d.Nack(false, true), waitErr)
}

func settleAndReport(ctx context.Context, d *amqp.Delivery, dec once.Decision, cfg *Config) error {
	err := Settle(ctx, d, dec, maxRequeueDelay(cfg))
	if cfg != nil && cfg.OnDecision != nil {
		cfg.OnDecision(d, dec, err)
	}
	return err
}

func maxRequeueDelay(cfg *Config) time.Duration {
	if cfg != nil && cfg.MaxRequeueDelay != 0 {
		return cfg.MaxRequeueDelay
	}
	return DefaultMaxRequeueDelay
}

func decide(ctx context.Context, scope once.Scope, d *amqp.Delivery, h Handler, cfg *Config) once.Decision {
	key, fp, bad := identify(d, cfg)
	if bad != nil {
		return *bad
	}
	if h == nil {
		return once.Decision{Action: once.RetryLater, Reason: once.ReasonMisconfigured, Err: errNilHandler}
	}
	return once.Consume(ctx, scope, key, fp, func(ctx context.Context) error { return h(ctx, d) })
}

// identify returns the key and fingerprint of d, or the decision for a
// delivery that cannot be processed.
func identify(d *amqp.Delivery, cfg *Config) (string, once.Fingerprint, *once.Decision) {
	if d == nil {
		return "", nil, &once.Decision{Action: once.RetryLater, Reason: once.ReasonMisconfigured, Err: errNilDelivery}
	}
	keyOf, fpOf := MessageIDKey, BodyFingerprint
	if cfg != nil {
		if cfg.Key != nil {
			keyOf = cfg.Key
		}
		if cfg.Fingerprint != nil {
			fpOf = cfg.Fingerprint
		}
	}
	key, err := keyOf(d)
	if err != nil {
		return "", nil, &once.Decision{Action: once.DeadLetter, Reason: once.ReasonInvalidKey, Err: err}
	}
	return key, fpOf(d), nil
}
