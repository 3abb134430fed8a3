package oncewatermill

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/adapters/internal/redelivery"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/hashers"
)

// Defaults of the waits before the middleware returns a failure.
const (
	// DefaultMaxRetryDelay caps every wait of the middleware.
	DefaultMaxRetryDelay = time.Second
	// DefaultRetryBackoff is the first wait of a RetryLater decision
	// without a RetryAfter hint.
	DefaultRetryBackoff = 100 * time.Millisecond
)

// ErrMissingKey: the message carries no idempotency key.
var ErrMissingKey = errors.New("oncewatermill: message has no idempotency key")

// ErrNoHandlerName: the message's context names no router handler
// (message.HandlerNameFromCtx is empty), so UUIDKey and MetadataKey cannot
// tell one handler's keys from another's. The router always sets it; it is
// missing when the middleware is called outside a router. Middleware
// answers it consume.RetryLater with consume.ReasonMisconfigured: the message is
// not at fault.
var ErrNoHandlerName = errors.New("oncewatermill: message context names no router handler (message.HandlerNameFromCtx is empty)")

// ConfigPanicError is the Decision.Err of a message whose Config.Key or
// Config.Fingerprint panicked: the middleware recovers the panic and
// answers it consume.RetryLater with consume.ReasonMisconfigured, backed off as
// any retryable failure. A callback that panics is a bug of the service
// (a bad deploy panics on every message), not of the message, which is
// handled once the callback is fixed instead of being dead-lettered.
type ConfigPanicError struct {
	Func  string // "Key" or "Fingerprint"
	Value any    // the value it panicked with
	Stack []byte // the stack at the panic
}

func (e *ConfigPanicError) Error() string {
	return fmt.Sprintf("oncewatermill: Config.%s panicked: %v", e.Func, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *ConfigPanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Config tunes Middleware. A nil *Config means the defaults.
type Config struct {
	// Key returns the idempotency key of a message. An error, or an empty
	// or invalid key, dead-letters it as consume.ReasonInvalidKey;
	// ErrNoHandlerName and a panic (a *ConfigPanicError) are answered
	// RetryLater, consume.ReasonMisconfigured: the message is not at fault.
	// Defaults to UUIDKey. A Key of your own must tell the handlers that
	// share the middleware apart (as UUIDKey does, with the handler name):
	// two handlers given the same key share one outcome, and the second
	// one never runs.
	Key func(msg *message.Message) (string, error)
	// Fingerprint returns the digest the key is bound to (nil for no
	// check). A panic is answered RetryLater, consume.ReasonMisconfigured,
	// with a *ConfigPanicError.
	// Defaults to PayloadFingerprint.
	Fingerprint func(msg *message.Message) once.Fingerprint
	// MaxRetryDelay caps every wait of the middleware before it returns a
	// failure to the router: the RetryAfter hint of a RetryLater decision,
	// and the backoff (RetryBackoff). Defaults to DefaultMaxRetryDelay; a
	// negative value never waits (a failing message is then redelivered
	// at the broker's speed).
	MaxRetryDelay time.Duration
	// RetryBackoff is the wait before returning a RetryLater decision
	// without a RetryAfter hint (a handler error or panic, a
	// misconfiguration, a lost lease): RetryBackoff for the first
	// consecutive failure of a message in this process, doubled for each
	// further one, at most MaxRetryDelay. A DeadLetter decision is
	// returned at once the first time the message is dead-lettered, for
	// the poison queue to move, whatever RetryLater failures came before;
	// when the same message is dead-lettered again (no poison queue, or
	// its publish failed, so the router nacked it), it waits RetryBackoff,
	// doubled for each further dead letter, at most MaxRetryDelay: dead
	// letters are counted apart from the RetryLater failures. So a failing
	// message is redelivered ever more slowly instead of at the broker's
	// speed. A message is named, for the counts, by its handler, key and
	// UUID, and its payload when it has neither key nor UUID; each count
	// takes a fixed size (a digest of that name), however long the UUID.
	// The counts are reset when the message is acknowledged; at most 10000
	// messages are counted: a new one drops the counts of an arbitrary
	// other. Defaults to
	// DefaultRetryBackoff; a negative value waits only for a hint.
	RetryBackoff time.Duration
	// MaxDeliveries, when positive, dead-letters a message whose handler
	// has failed on MaxDeliveries of its deliveries in this process: the
	// failure that reaches the limit, and every one after it, is returned
	// as a *DeadLetterError with consume.ReasonExhausted instead of a
	// *RetryError, for the poison queue to move (see RetryBackoff for its
	// waits: it is counted as a dead letter). A handler failure is a
	// retryable error or a panic (consume.ReasonHandlerError), or a
	// failure at the deadline of a middleware.Timeout placed outside the
	// middleware (consume.ReasonCanceled with the message's context past
	// its deadline, which no shutdown sets). A Watermill message carries no delivery count, so the
	// middleware counts the handler's failures itself, with the failure
	// counts of RetryBackoff: the other deliveries (a key in progress
	// elsewhere or held, a store outage, a misconfiguration, a lost lease, a
	// shutdown) are not counted and never dead-letter the message, unlike
	// onceamqp's and oncenats's limits, whose broker counts every delivery.
	// A key in progress is retried until its owner finishes or its lease
	// ends; a held key until the hold ends or the key is resolved. The
	// count is this Middleware's, in this process: a message redelivered
	// to another process or after a restart starts from zero there, so
	// with several consumers a message may fail up to MaxDeliveries times
	// on each. It is reset when the message is acknowledged, and lost when
	// the message's counts are dropped (see RetryBackoff). Defaults to 0:
	// no limit (a poison message is redelivered forever, backed off).
	MaxDeliveries int
	// OnDecision, when set, is called with each message's decision, before
	// the middleware waits; a RetryLater decision's RetryAfter is then the
	// wait the middleware applies, and a message dead-lettered by
	// MaxDeliveries is told consume.ReasonExhausted. A panic in it is
	// recovered and changes nothing. Defaults to nil.
	OnDecision func(msg *message.Message, d consume.Decision)
}

// UUIDKey returns the key of the message's UUID for the router handler
// that consumes it: once.DerivedKey(message.HandlerNameFromCtx(ctx),
// msg.UUID), so that two handlers sharing the middleware (router level)
// each run once per message. It returns ErrNoHandlerName without a handler
// name, ErrMissingKey for an empty UUID.
func UUIDKey(msg *message.Message) (string, error) {
	return handlerKey(msg, msg.UUID)
}

// MetadataKey returns a Config.Key that reads the metadata field name (a
// business key such as an order ID), for the router handler that consumes
// the message: once.DerivedKey(handler name, value). It returns
// ErrNoHandlerName without a handler name, ErrMissingKey when the field is
// empty.
func MetadataKey(name string) func(*message.Message) (string, error) {
	return func(msg *message.Message) (string, error) {
		return handlerKey(msg, msg.Metadata.Get(name))
	}
}

func handlerKey(msg *message.Message, id string) (string, error) {
	handler := message.HandlerNameFromCtx(msg.Context())
	if handler == "" {
		return "", ErrNoHandlerName
	}
	if id == "" {
		return "", ErrMissingKey
	}
	return once.DerivedKey(handler, id), nil
}

// PayloadFingerprint is a digest of the message's payload.
func PayloadFingerprint(msg *message.Message) once.Fingerprint {
	return hashers.Parts(msg.Payload)
}

// RetryError is returned for a RetryLater decision: the router nacks the
// message and it is delivered again. Decision.RetryAfter is the wait the
// middleware applied before returning it (the hint capped by
// MaxRetryDelay, or the backoff): zero if the message's context was
// cancelled (a shutdown) before it, and cut short if it is cancelled
// during it. A context past its deadline (middleware.Timeout placed
// outside the middleware) does not shorten the wait: place Timeout inside
// Middleware, so that it bounds the handler alone.
type RetryError struct{ Decision consume.Decision }

func (e *RetryError) Error() string {
	return "oncewatermill: " + e.Decision.String() + errSuffix(e.Decision.Err)
}

// Unwrap returns the error behind the decision.
func (e *RetryError) Unwrap() error { return e.Decision.Err }

// DeadLetterError is returned for a DeadLetter decision. Wait is how long
// the middleware waited before returning it: zero the first time, the
// backoff when the same message was dead-lettered before (see
// Config.RetryBackoff).
type DeadLetterError struct {
	Decision consume.Decision
	Wait     time.Duration
}

func (e *DeadLetterError) Error() string {
	return "oncewatermill: " + e.Decision.String() + errSuffix(e.Decision.Err)
}

// Unwrap returns the error behind the decision.
func (e *DeadLetterError) Unwrap() error { return e.Decision.Err }

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// IsDeadLetter reports whether err is a *DeadLetterError: the filter of a
// poison queue (middleware.PoisonQueueWithFilter) placed outside
// Middleware.
func IsDeadLetter(err error) bool {
	var dl *DeadLetterError
	return errors.As(err, &dl)
}

// storedMessage is a produced message as the store keeps it.
type storedMessage struct {
	UUID     string            `json:"uuid"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Payload  []byte            `json:"payload,omitempty"`
}

// maxCounted bounds the consecutive-failure counts one Middleware keeps.
const maxCounted = 10000

// failures counts the consecutive failures of each message in this
// process, keyed by a digest of its failureID: a fixed 32 bytes however
// long its UUID or key.
type failures struct {
	mu sync.Mutex
	n  map[[sha256.Size]byte]counts
}

// counts are a message's consecutive RetryLater failures and, apart, its
// dead letters, and the handler's failures among them (MaxDeliveries).
type counts struct{ retries, deadLetters, handlerFailures uint64 }

// update applies fn to the counts of id, under the lock, and returns
// fn's result. A new id drops the counts of an arbitrary other when
// maxCounted messages are counted.
func (f *failures) update(id [sha256.Size]byte, fn func(*counts) uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[[sha256.Size]byte]counts{}
	}
	c, ok := f.n[id]
	if !ok && len(f.n) >= maxCounted {
		for k := range f.n { // drop one count, arbitrary
			delete(f.n, k)
			break
		}
	}
	n := fn(&c)
	f.n[id] = c
	return n
}

// add counts a failure of id, a dead letter if deadLetter, and returns the
// count of that kind.
func (f *failures) add(id [sha256.Size]byte, deadLetter bool) uint64 {
	return f.update(id, func(c *counts) uint64 {
		if deadLetter {
			c.deadLetters++
			return c.deadLetters
		}
		c.retries++
		return c.retries
	})
}

// handlerFailed counts a handler failure of id and returns the count.
func (f *failures) handlerFailed(id [sha256.Size]byte) uint64 {
	return f.update(id, func(c *counts) uint64 {
		c.handlerFailures++
		return c.handlerFailures
	})
}

func (f *failures) reset(id [sha256.Size]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.n, id)
}

// Middleware returns the router middleware that runs each message's
// handler at most once per key in scope, as the package documentation
// describes. It may be added to the router (AddMiddleware) or to one
// handler: the default keys include the handler's name.
func Middleware(scope once.Scope, cfg *Config) message.HandlerMiddleware {
	c := Config{Key: UUIDKey, Fingerprint: PayloadFingerprint, MaxRetryDelay: DefaultMaxRetryDelay, RetryBackoff: DefaultRetryBackoff}
	if cfg != nil {
		if cfg.Key != nil {
			c.Key = cfg.Key
		}
		if cfg.Fingerprint != nil {
			c.Fingerprint = cfg.Fingerprint
		}
		if cfg.MaxRetryDelay != 0 {
			c.MaxRetryDelay = cfg.MaxRetryDelay
		}
		if cfg.RetryBackoff != 0 {
			c.RetryBackoff = cfg.RetryBackoff
		}
		c.MaxDeliveries = cfg.MaxDeliveries
		c.OnDecision = cfg.OnDecision
	}
	fails := &failures{}
	limit := redelivery.Policy{Adapter: "oncewatermill", MaxDeliveries: c.MaxDeliveries, Counted: "handler failure"}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, d, key := run(scope, msg, h, c)
			if msg == nil {
				notify(c.OnDecision, msg, d)
				return nil, &RetryError{Decision: d}
			}
			id := failureID(msg, key)
			if d.Action == consume.Ack {
				fails.reset(id)
				notify(c.OnDecision, msg, d)
				return produced, nil
			}
			if redelivery.HandlerFailed(msg.Context(), d) {
				d, _ = limit.Exhausted(msg.Context(), d, fails.handlerFailed(id))
			}
			wait := c.wait(d, fails.add(id, d.Action == consume.DeadLetter))
			if errors.Is(msg.Context().Err(), context.Canceled) {
				wait = 0 // a shutdown: nothing to pace
			}
			if d.Action == consume.RetryLater {
				d.RetryAfter = wait
			}
			notify(c.OnDecision, msg, d)
			sleep(msg.Context(), wait)
			if d.Action == consume.DeadLetter {
				return nil, &DeadLetterError{Decision: d, Wait: wait}
			}
			return nil, &RetryError{Decision: d}
		}
	}
}

// wait is how long to wait before returning d, the n-th consecutive
// failure of its message.
func (c Config) wait(d consume.Decision, n uint64) time.Duration {
	if c.MaxRetryDelay < 0 {
		return 0
	}
	if d.Action == consume.RetryLater && d.RetryAfter > 0 {
		return min(d.RetryAfter, c.MaxRetryDelay)
	}
	if d.Action == consume.DeadLetter {
		if n <= 1 {
			return 0 // for a poison queue to move it
		}
		n--
	}
	return redelivery.Backoff(c.RetryBackoff, c.MaxRetryDelay, n)
}

// failureID names a message for the failure counts: the SHA-256 of its
// handler, its key (empty when there is none) and its UUID,
// length-prefixed, and of its payload when it has neither key nor UUID
// (distinct messages of a publisher that sets no UUID must not share one
// count).
func failureID(msg *message.Message, key string) [sha256.Size]byte {
	h := sha256.New()
	writePart(h, message.HandlerNameFromCtx(msg.Context()))
	writePart(h, key)
	writePart(h, msg.UUID)
	if key == "" && msg.UUID == "" {
		writePart(h, string(msg.Payload))
	}
	var id [sha256.Size]byte
	h.Sum(id[:0])
	return id
}

func writePart(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	_, _ = h.Write([]byte(s))
}

// sleep waits d, or until ctx is cancelled. A ctx past its deadline
// (middleware.Timeout outside the middleware) does not end the wait: the
// failure is paced all the same, instead of being redelivered at the
// broker's speed.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return
	case <-ctx.Done():
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		<-t.C
	}
}

// notify calls OnDecision, if set; its panic is recovered and ignored.
func notify(fn func(*message.Message, consume.Decision), msg *message.Message, d consume.Decision) {
	if fn == nil {
		return
	}
	defer func() { _ = recover() }()
	fn(msg, d)
}

// callKey and callFingerprint run the Config callbacks, answering a
// panic with a *ConfigPanicError.
func callKey(c Config, msg *message.Message) (key string, err error) {
	defer recoverCallback("Key", &err)
	return c.Key(msg)
}

func callFingerprint(c Config, msg *message.Message) (fp once.Fingerprint, err error) {
	defer recoverCallback("Fingerprint", &err)
	return c.Fingerprint(msg), nil
}

func recoverCallback(name string, err *error) {
	if p := recover(); p != nil {
		*err = &ConfigPanicError{Func: name, Value: p, Stack: debug.Stack()}
	}
}

func run(scope once.Scope, msg *message.Message, h message.HandlerFunc, c Config) ([]*message.Message, consume.Decision, string) {
	if msg == nil {
		return nil, consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: errors.New("oncewatermill: nil message")}, ""
	}
	key, err := callKey(c, msg)
	if errors.Is(err, ErrNoHandlerName) {
		return nil, consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: err}, ""
	}
	var pe *ConfigPanicError
	if errors.As(err, &pe) {
		return nil, consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: err}, ""
	}
	if err != nil {
		return nil, consume.Decision{Action: consume.DeadLetter, Reason: consume.ReasonInvalidKey, Err: err}, ""
	}
	fp, err := callFingerprint(c, msg)
	if err != nil { // only a panic: a *ConfigPanicError
		return nil, consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonMisconfigured, Err: err}, key
	}
	outer := msg.Context()
	stored, d := consume.Value(outer, scope, key, fp, func(ctx context.Context) ([]storedMessage, error) {
		msg.SetContext(ctx) // cancelled if the claim is lost
		defer msg.SetContext(outer)
		produced, err := h(msg)
		if err != nil {
			return nil, err
		}
		out := make([]storedMessage, 0, len(produced))
		for _, p := range produced {
			if p == nil {
				continue
			}
			out = append(out, storedMessage{UUID: p.UUID, Metadata: p.Metadata, Payload: p.Payload})
		}
		return out, nil
	})
	if d.Action != consume.Ack {
		return nil, d, key
	}
	produced := make([]*message.Message, 0, len(stored))
	for _, s := range stored {
		m := message.NewMessageWithContext(outer, s.UUID, s.Payload)
		for k, v := range s.Metadata {
			m.Metadata.Set(k, v)
		}
		produced = append(produced, m)
	}
	return produced, d, key
}
