package oncenats

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/consume"
)

// Handler processes one message. Its error is classified as once.Do
// classifies fn's errors: wrap it with once.Final for an answer that must
// not be retried, consume.Reject for a message that can never be processed,
// once.Hold for an unknown outcome.
type Handler func(ctx context.Context, msg jetstream.Msg) error

// Config tunes Process. A nil *Config means the defaults.
type Config struct {
	// Key returns the idempotency key of a message. An error, or an empty
	// or invalid key, terminates the message as consume.ReasonInvalidKey. A
	// panic (a *ConfigPanicError) is a bug of the service, not of the
	// message: it is Nak-ed as consume.ReasonMisconfigured, backed off as
	// RetryBackoff says and never terminated by MaxDeliveries. Defaults to
	// MsgIDKey.
	Key func(msg jetstream.Msg) (string, error)
	// Fingerprint returns the digest the key is bound to; nil disables the
	// check. A panic in it is Nak-ed as a Key's is (consume.ReasonMisconfigured,
	// a *ConfigPanicError). Defaults to PayloadFingerprint.
	Fingerprint func(msg jetstream.Msg) once.Fingerprint
	// Heartbeat, when positive, makes Process tell JetStream every
	// Heartbeat that the message is still being worked on
	// (msg.InProgress), so that a handler slower than the consumer's
	// AckWait is not redelivered meanwhile. Set it below AckWait. Defaults
	// to 0: no heartbeat.
	Heartbeat time.Duration
	// TermWithReason makes a dead-letter decision terminate the message
	// with msg.TermWithReason(reason), so that the MSG_TERMINATED advisory
	// carries the reason. Enable it only on nats-server 2.10.4 or later:
	// older servers ignore a termination with a reason, and the message is
	// then redelivered after AckWait instead of being terminated (seen with
	// 2.9.10). Defaults to false: msg.Term().
	TermWithReason bool
	// RetryBackoff is the Nak delay of a RetryLater decision without a
	// RetryAfter hint (a handler error or panic, a misconfiguration, a lost
	// lease): RetryBackoff on the first delivery, doubled for every
	// further one (JetStream's NumDelivered), at most MaxRetryBackoff. A
	// poison message is so redelivered ever more slowly, not at broker
	// speed. A shutdown (consume.ReasonCanceled with Process's context
	// cancelled: nothing failed) is Nak-ed after RetryBackoff (at most
	// MaxRetryBackoff), whatever the delivery count, so that another
	// consumer takes the message soon; a context past its deadline is
	// backed off as a handler error.
	// MaxRetryBackoff bounds every Nak delay: a store outage's,
	// consume.StoreRetryAfter doubled per delivery, a key in progress
	// elsewhere's, the owner's lease left, and a decision's hint. Defaults to DefaultRetryBackoff
	// and DefaultMaxRetryBackoff; a negative value Naks at once (a
	// negative MaxRetryBackoff leaves an in-progress key's delay uncapped).
	RetryBackoff    time.Duration
	MaxRetryBackoff time.Duration
	// MaxDeliveries, when positive, terminates (Term) a message whose
	// handler returned a retryable error or panicked on a delivery whose
	// JetStream delivery count (NumDelivered) is at least MaxDeliveries, as
	// consume.ReasonExhausted, instead of Nak-ing it again. NumDelivered counts
	// every delivery, not handler failures: the Naks of an in-progress or
	// held key, of a store outage or of a shutdown, and the redeliveries
	// after AckWait of a killed consumer count too, so a message may be
	// terminated on fewer than MaxDeliveries handler failures (see the
	// package doc). A handler that outlives a deadline on Process's context
	// (consume.ReasonCanceled, context.DeadlineExceeded) counts as failing. A
	// shutdown (consume.ReasonCanceled, the context cancelled) and the other
	// retry reasons (in progress, store down, held) are never terminated. Leave
	// the consumer's MaxDeliver unlimited (-1): past it JetStream drops the
	// message without terminating it. Defaults to 0: no limit.
	MaxDeliveries int
	// OnDecision, when set, is called after each message is settled, with
	// the decision and the error of the acknowledgement (nil when it was
	// sent). Use it to log and count. A panic in it is recovered and
	// ignored: the message is settled already. Defaults to nil.
	OnDecision func(msg jetstream.Msg, d consume.Decision, ackErr error)
}

// Process runs h for msg at most once per key in scope (the consumer
// group), settles msg as consume.Do decides and returns the decision
// and the acknowledgement's error. It never panics: a panic in h is
// answered with a Nak (consume.ReasonHandlerError). The returned decision's
// RetryAfter is the delay of the Nak actually sent: the owner's lease left
// for an in-progress key (at most Config.MaxRetryBackoff), a backoff by
// the delivery count for a store outage or a RetryLater without a hint,
// RetryBackoff for a shutdown (see the package doc). A handler
// failing on the Config.MaxDeliveries-th delivery terminates the message
// (consume.ReasonExhausted).
func Process(ctx context.Context, scope once.Scope, msg jetstream.Msg, h Handler, cfg *Config) (consume.Decision, error) {
	d := pace(ctx, msg, decide(ctx, scope, msg, h, cfg), cfg)
	err := settle(msg, d, cfg != nil && cfg.TermWithReason)
	report(cfg, msg, d, err)
	return d, err
}

// ProcessTx is Process with the handler inside one database transaction,
// as consume.DoTx runs it: begin opens the transaction and returns it
// with a store bound to it (a SQL store's BeginTx);
// the claim, the handler's writes through tx and the outcome commit
// together before the message is acknowledged. A consumer killed at any
// point then leaves the effect either committed with its record (the
// redelivery is acknowledged as a replay) or not at all (the redelivery
// runs the handler).
func ProcessTx[X once.Tx](ctx context.Context, scope once.Scope, msg jetstream.Msg, begin func(context.Context) (X, backends.Store, error), h func(ctx context.Context, tx X, msg jetstream.Msg) error, cfg *Config) (consume.Decision, error) {
	d := pace(ctx, msg, decideTx(ctx, scope, msg, begin, h, cfg), cfg)
	err := settle(msg, d, cfg != nil && cfg.TermWithReason)
	report(cfg, msg, d, err)
	return d, err
}

func decideTx[X once.Tx](ctx context.Context, scope once.Scope, msg jetstream.Msg, begin func(context.Context) (X, backends.Store, error), h func(context.Context, X, jetstream.Msg) error, cfg *Config) consume.Decision {
	if h == nil {
		return consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: errors.New("oncenats: nil handler")}
	}
	key, fp, heartbeat, bad := identify(msg, cfg)
	if bad != nil {
		return *bad
	}
	return consume.DoTx(ctx, scope, key, fp, begin, func(ctx context.Context, tx X) error {
		stop := startHeartbeat(msg, heartbeat)
		defer stop()
		return h(ctx, tx, msg)
	})
}

// HandlerFunc returns a jetstream.MessageHandler for Consumer.Consume that
// calls Process with ctx for every message.
func HandlerFunc(ctx context.Context, scope once.Scope, h Handler, cfg *Config) jetstream.MessageHandler {
	return func(msg jetstream.Msg) { _, _ = Process(ctx, scope, msg, h, cfg) }
}

// Settle acknowledges msg as d says: Ack, NakWithDelay (Nak without a
// hint) or Term. Unlike Process, it applies no backoff or delivery limit.
func Settle(msg jetstream.Msg, d consume.Decision) error { return settle(msg, d, false) }

func settle(msg jetstream.Msg, d consume.Decision, withReason bool) error {
	if msg == nil {
		return errNilMessage
	}
	switch d.Action {
	case consume.Ack:
		return msg.Ack()
	case consume.DeadLetter:
		if withReason {
			return msg.TermWithReason(string(d.Reason))
		}
		return msg.Term()
	default:
		if d.RetryAfter > 0 {
			return msg.NakWithDelay(d.RetryAfter)
		}
		return msg.Nak()
	}
}

var errNilMessage = errors.New("oncenats: nil message")

// decide reads the key and fingerprint of msg and runs h under consume.Do.
func decide(ctx context.Context, scope once.Scope, msg jetstream.Msg, h Handler, cfg *Config) consume.Decision {
	if h == nil {
		return consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: errors.New("oncenats: nil handler")}
	}
	key, fp, heartbeat, bad := identify(msg, cfg)
	if bad != nil {
		return *bad
	}
	return consume.Do(ctx, scope, key, fp, func(ctx context.Context) error {
		stop := startHeartbeat(msg, heartbeat)
		defer stop()
		return h(ctx, msg)
	})
}

// identify returns the key, the fingerprint and the heartbeat of msg, or
// the decision for a message that cannot be processed.
func identify(msg jetstream.Msg, cfg *Config) (key string, fp once.Fingerprint, heartbeat time.Duration, bad *consume.Decision) {
	if msg == nil {
		return "", nil, 0, &consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: errNilMessage}
	}
	keyOf, fpOf := MsgIDKey, PayloadFingerprint
	if cfg != nil {
		if cfg.Key != nil {
			keyOf = cfg.Key
		}
		if cfg.Fingerprint != nil {
			fpOf = cfg.Fingerprint
		}
		heartbeat = cfg.Heartbeat
	}
	key, err := callKey(keyOf, msg)
	var pe *ConfigPanicError
	if errors.As(err, &pe) {
		return "", nil, 0, &consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: err}
	}
	if err != nil {
		return "", nil, 0, &consume.Decision{Action: consume.DeadLetter, Reason: consume.ReasonInvalidKey, Err: err}
	}
	fp, err = callFingerprint(fpOf, msg)
	if err != nil { // only a panic: a *ConfigPanicError
		return "", nil, 0, &consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: err}
	}
	return key, fp, heartbeat, nil
}

// ConfigPanicError is the Err of the decision for a message whose
// Config.Key or Config.Fingerprint panicked (Func names which). The
// message is Nak-ed as consume.ReasonMisconfigured, as the core answers a
// misconfiguration: a callback that panics is a bug of the service (a bad
// deploy may panic on every message), and terminating each message would
// dead-letter the whole stream; once the callback is fixed, the messages
// are processed.
type ConfigPanicError struct {
	Func  string // "Key" or "Fingerprint"
	Value any    // the value it panicked with
	Stack []byte // the stack at the panic
}

func (e *ConfigPanicError) Error() string {
	return fmt.Sprintf("oncenats: Config.%s panicked: %v", e.Func, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *ConfigPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func callKey(f func(jetstream.Msg) (string, error), msg jetstream.Msg) (key string, err error) {
	defer func() {
		if p := recover(); p != nil {
			key, err = "", &ConfigPanicError{Func: "Key", Value: p, Stack: debug.Stack()}
		}
	}()
	return f(msg)
}

func callFingerprint(f func(jetstream.Msg) once.Fingerprint, msg jetstream.Msg) (fp once.Fingerprint, err error) {
	defer func() {
		if p := recover(); p != nil {
			fp, err = nil, &ConfigPanicError{Func: "Fingerprint", Value: p, Stack: debug.Stack()}
		}
	}()
	return f(msg), nil
}

// report calls cfg.OnDecision, if any; a panic in it is recovered and
// ignored, since the message is already settled.
func report(cfg *Config, msg jetstream.Msg, d consume.Decision, ackErr error) {
	if cfg == nil || cfg.OnDecision == nil {
		return
	}
	defer func() { _ = recover() }()
	cfg.OnDecision(msg, d, ackErr)
}

// startHeartbeat sends msg.InProgress every d until stop is called.
func startHeartbeat(msg jetstream.Msg, d time.Duration) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() { close(done); <-finished }
}
