package onceamqp

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/consume"
)

// DefaultMaxRequeueDelay caps the wait before a requeue. Every requeue
// is a delivery that a quorum queue counts (x-delivery-count) against its
// x-delivery-limit, so the cap is long enough that an in-progress key
// under the default 30 s lease costs about 6 requeues, not 30; and short
// enough that a delivery waiting holds its prefetch slot (and a consumer
// that processes deliveries one at a time) for at most 5 s.
const DefaultMaxRequeueDelay = 5 * time.Second

// MaxShutdownWait bounds how long Process waits before a requeue once its
// context is cancelled (a shutdown): RequeueBackoff, at most MaxRequeueDelay
// and at most MaxShutdownWait. A consumer shutting down that still
// receives deliveries would otherwise get each requeued one back at once,
// hundreds of times a second, each a delivery that a quorum queue counts
// toward its x-delivery-limit; a longer wait would hold up the shutdown.
const MaxShutdownWait = time.Second

// Handler processes one delivery. Its error is classified as once.Do
// classifies fn's errors: wrap it with once.Final for an answer that must
// not be retried, consume.Reject for a message that can never be processed,
// once.Hold for an unknown outcome.
//
// Process settles the delivery; the handler must not. It is given a copy
// of the delivery whose Ack, Nack and Reject do nothing and return
// ErrSettledByProcess (a second acknowledgement of one delivery tag makes
// RabbitMQ close the channel, which requeues every other delivery on it).
type Handler func(ctx context.Context, d *amqp.Delivery) error

// ErrSettledByProcess is what Ack, Nack and Reject of the delivery a
// handler is given return: Process settles it as the decision says.
var ErrSettledByProcess = errors.New("onceamqp: the delivery is settled by Process, not by its handler")

// refusing is the Acknowledger of a handler's copy of the delivery.
type refusing struct{}

func (refusing) Ack(uint64, bool) error        { return ErrSettledByProcess }
func (refusing) Nack(uint64, bool, bool) error { return ErrSettledByProcess }
func (refusing) Reject(uint64, bool) error     { return ErrSettledByProcess }

// handlerCopy is d as its handler sees it: unable to settle itself.
func handlerCopy(d *amqp.Delivery) *amqp.Delivery {
	c := *d
	c.Acknowledger = refusing{}
	return &c
}

// Config tunes Process. A nil *Config means the defaults.
type Config struct {
	// Key returns the idempotency key of a delivery. An error, or an empty
	// or invalid key, dead-letters it as consume.ReasonInvalidKey. A panic (a
	// *ConfigPanicError) is a bug of the service, not of the message: the
	// delivery is requeued as consume.ReasonMisconfigured, backed off as
	// RequeueBackoff says and never dead-lettered by MaxDeliveries.
	// Defaults to MessageIDKey.
	Key func(d *amqp.Delivery) (string, error)
	// Fingerprint returns the digest the key is bound to; nil disables the
	// check. A panic in it is requeued as a Key's is
	// (consume.ReasonMisconfigured, a *ConfigPanicError). Defaults to
	// BodyFingerprint.
	Fingerprint func(d *amqp.Delivery) once.Fingerprint
	// MaxRequeueDelay caps how long a RetryLater decision waits before it
	// requeues the delivery. AMQP has no delayed requeue, so the wait holds
	// the delivery, its prefetch slot and the goroutine that called
	// Process: a consumer that processes deliveries one at a time stalls
	// for it (process them concurrently, up to the channel's prefetch, to
	// avoid that). A shorter cap requeues more often, and every requeue is
	// a delivery a quorum queue counts toward its x-delivery-limit (see the
	// package doc). Defaults to DefaultMaxRequeueDelay (5 s); a negative
	// value requeues at once.
	MaxRequeueDelay time.Duration
	// RequeueBackoff is the wait of a RetryLater decision without a
	// RetryAfter hint (a handler error or panic, a misconfiguration, a lost
	// lease): RequeueBackoff on the first delivery, doubled for every
	// further one (Deliveries), at most MaxRequeueDelay. A store outage
	// waits consume.StoreRetryAfter doubled the same way. Once Process's
	// context is cancelled (a shutdown), a requeue waits RequeueBackoff
	// whatever the count, at most MaxRequeueDelay and MaxShutdownWait (see
	// the package doc); a context past its deadline is backed off as a
	// handler error. The delivery
	// count is only known on quorum queues (x-delivery-count); classic
	// queues tell only whether a delivery is a redelivery (counted 2).
	// Defaults to DefaultRequeueBackoff; a negative value requeues at once.
	RequeueBackoff time.Duration
	// MaxDeliveries, when positive, dead-letters (Nack without requeue) a
	// delivery whose handler returned a retryable error or panicked on a
	// delivery whose count (Deliveries) is at least MaxDeliveries, as
	// consume.ReasonExhausted. The count is every delivery of the message,
	// not its handler failures: the requeues of an in-progress or held key,
	// of a store outage or of a shutdown, and the redeliveries of a killed
	// consumer's deliveries count too, so a message may be dead-lettered
	// on fewer than MaxDeliveries handler failures. A handler that
	// outlives a deadline on Process's context (consume.ReasonCanceled,
	// context.DeadlineExceeded) counts as failing. A shutdown
	// (consume.ReasonCanceled, the context cancelled) and the other retry
	// reasons (in progress, store down, held) are never dead-lettered by
	// it.
	//
	// It needs the x-delivery-count header of a quorum queue. On a classic
	// queue a delivery counts 1, or 2 once redelivered, forever: a
	// MaxDeliveries of 3 or more never fires (a poison message is requeued
	// forever), and 2 fires on the first failure of any redelivered
	// message, whatever requeued it. Use a quorum queue. Its
	// x-delivery-limit (RabbitMQ 4 defaults it to 20) must
	// exceed MaxDeliveries plus the requeues a message can cost without a
	// handler failure (see the package doc), or the broker dead-letters or
	// drops the message itself. Defaults to 0: no limit.
	MaxDeliveries int
	// OnDecision, when set, is called after each delivery is settled, with
	// the decision and the error of the acknowledgement. A panic in it is
	// recovered and ignored: the delivery is settled already. Defaults to
	// nil.
	OnDecision func(d *amqp.Delivery, dec consume.Decision, ackErr error)
}

var (
	errNilDelivery = errors.New("onceamqp: nil delivery")
	errNilHandler  = errors.New("onceamqp: nil handler")
)

// Process runs h for d at most once per key in scope (the consumer group),
// settles d as consume.Do decides and returns the decision and the
// acknowledgement's error. It never panics: a panic in h is answered with
// a requeue (consume.ReasonHandlerError). A RetryLater waits before its requeue
// (see the package doc); the returned decision's RetryAfter is the wait
// applied, at most Config.MaxRequeueDelay, not the hint. Once ctx is
// cancelled (a shutdown), the requeue waits Config.RequeueBackoff, at most
// MaxShutdownWait, or what is left of the wait if less, and Process
// returns ctx's error with the acknowledgement's after such a wait; a ctx
// past its deadline does not shorten the wait. A handler failing on
// the Config.MaxDeliveries-th delivery dead-letters it
// (consume.ReasonExhausted).
func Process(ctx context.Context, scope once.Scope, d *amqp.Delivery, h Handler, cfg *Config) (consume.Decision, error) {
	return settleAndReport(ctx, d, pace(ctx, d, decide(ctx, scope, d, h, cfg), cfg), cfg)
}

// ProcessTx is Process with the handler inside one database transaction,
// as consume.DoTx runs it: begin opens the transaction and returns it
// with a store bound to it (a SQL store's BeginTx);
// the claim, the handler's writes through tx and the outcome commit
// together before the delivery is acknowledged.
func ProcessTx[X once.Tx](ctx context.Context, scope once.Scope, d *amqp.Delivery, begin func(context.Context) (X, backends.Store, error), h func(ctx context.Context, tx X, d *amqp.Delivery) error, cfg *Config) (consume.Decision, error) {
	var dec consume.Decision
	switch key, fp, bad := identify(d, cfg); {
	case bad != nil:
		dec = *bad
	case h == nil:
		dec = consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: errNilHandler}
	default:
		hd := handlerCopy(d)
		dec = consume.DoTx(ctx, scope, key, fp, begin, func(ctx context.Context, tx X) error { return h(ctx, tx, hd) })
	}
	return settleAndReport(ctx, d, pace(ctx, d, dec, cfg), cfg)
}

// Settle acknowledges d as dec says, waiting at most maxDelay before a
// requeue (a negative maxDelay requeues at once). It returns ctx's error
// if ctx ends during the wait, after requeueing. Unlike Process, it
// applies no backoff or delivery limit.
func Settle(ctx context.Context, d *amqp.Delivery, dec consume.Decision, maxDelay time.Duration) error {
	_, err := settle(ctx, d, dec, maxDelay, 0, false)
	return err
}

// settle is Settle; it also returns the wait applied before a requeue.
// Once ctx has ended, before the wait or during it, the requeue waits at
// most grace more, within the wait planned; with paceDeadline, a ctx past
// its deadline (a per-message timeout, not a shutdown) waits all of it.
func settle(ctx context.Context, d *amqp.Delivery, dec consume.Decision, maxDelay, grace time.Duration, paceDeadline bool) (time.Duration, error) {
	if d == nil {
		return 0, errNilDelivery
	}
	switch dec.Action {
	case consume.Ack:
		return 0, d.Ack(false)
	case consume.DeadLetter:
		return 0, d.Nack(false, false)
	}
	var waitErr error
	wait := max(min(dec.RetryAfter, maxDelay), 0)
	shutdown := func() bool {
		err := ctx.Err()
		return err != nil && !(paceDeadline && errors.Is(err, context.DeadlineExceeded))
	}
	if wait > 0 {
		var waited time.Duration
		if !shutdown() {
			start := time.Now()
			t := time.NewTimer(wait)
			var done <-chan struct{}
			if ctx.Err() == nil {
				done = ctx.Done()
			}
			select {
			case <-t.C:
				waited = wait
			case <-done:
				if shutdown() {
					t.Stop()
					waited = min(time.Since(start), wait)
				} else { // past its deadline: paced all the same
					<-t.C
					waited = wait
				}
			}
		}
		if waited < wait { // ctx ended: a shutdown
			waitErr = ctx.Err()
			rest := min(wait-waited, max(grace, 0))
			if rest > 0 {
				time.Sleep(rest)
			}
			waited += rest
		}
		wait = waited
	}
	return wait, errors.Join(d.Nack(false, true), waitErr)
}

// settleAndReport settles d and reports dec with, for a requeue, the wait
// actually applied as its RetryAfter.
func settleAndReport(ctx context.Context, d *amqp.Delivery, dec consume.Decision, cfg *Config) (consume.Decision, error) {
	p := policy(cfg)
	wait, err := settle(ctx, d, dec, p.Limit, p.ShutdownWait(), true)
	if dec.Action == consume.RetryLater && d != nil {
		dec.RetryAfter = wait
	}
	report(cfg, d, dec, err)
	return dec, err
}

// report calls cfg.OnDecision, if any; a panic in it is recovered and
// ignored, since the delivery is already settled.
func report(cfg *Config, d *amqp.Delivery, dec consume.Decision, ackErr error) {
	if cfg == nil || cfg.OnDecision == nil {
		return
	}
	defer func() { _ = recover() }()
	cfg.OnDecision(d, dec, ackErr)
}

func decide(ctx context.Context, scope once.Scope, d *amqp.Delivery, h Handler, cfg *Config) consume.Decision {
	key, fp, bad := identify(d, cfg)
	if bad != nil {
		return *bad
	}
	if h == nil {
		return consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: errNilHandler}
	}
	hd := handlerCopy(d)
	return consume.Do(ctx, scope, key, fp, func(ctx context.Context) error { return h(ctx, hd) })
}

// identify returns the key and fingerprint of d, or the decision for a
// delivery that cannot be processed.
func identify(d *amqp.Delivery, cfg *Config) (string, once.Fingerprint, *consume.Decision) {
	if d == nil {
		return "", nil, &consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: errNilDelivery}
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
	key, err := callKey(keyOf, d)
	var pe *ConfigPanicError
	if errors.As(err, &pe) {
		return "", nil, &consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: err}
	}
	if err != nil {
		return "", nil, &consume.Decision{Action: consume.DeadLetter, Reason: consume.ReasonInvalidKey, Err: err}
	}
	fp, err := callFingerprint(fpOf, d)
	if err != nil { // only a panic: a *ConfigPanicError
		return "", nil, &consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: err}
	}
	return key, fp, nil
}

// ConfigPanicError is the Err of the decision for a delivery whose
// Config.Key or Config.Fingerprint panicked (Func names which). The
// delivery is requeued as consume.ReasonMisconfigured, as the core answers a
// misconfiguration: a callback that panics is a bug of the service (a bad
// deploy may panic on every message), and dead-lettering each delivery
// would dead-letter the whole queue; once the callback is fixed, the
// messages are processed.
type ConfigPanicError struct {
	Func  string // "Key" or "Fingerprint"
	Value any    // the value it panicked with
	Stack []byte // the stack at the panic
}

func (e *ConfigPanicError) Error() string {
	return fmt.Sprintf("onceamqp: Config.%s panicked: %v", e.Func, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *ConfigPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func callKey(f func(*amqp.Delivery) (string, error), d *amqp.Delivery) (key string, err error) {
	defer func() {
		if p := recover(); p != nil {
			key, err = "", &ConfigPanicError{Func: "Key", Value: p, Stack: debug.Stack()}
		}
	}()
	return f(d)
}

func callFingerprint(f func(*amqp.Delivery) once.Fingerprint, d *amqp.Delivery) (fp once.Fingerprint, err error) {
	defer func() {
		if p := recover(); p != nil {
			fp, err = nil, &ConfigPanicError{Func: "Fingerprint", Value: p, Stack: debug.Stack()}
		}
	}()
	return f(d), nil
}
