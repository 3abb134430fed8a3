package watermillonce

import (
	"context"
	"errors"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// DefaultMaxRetryDelay caps the wait before a RetryLater decision returns.
const DefaultMaxRetryDelay = time.Second

// ErrMissingKey: the message carries no idempotency key.
var ErrMissingKey = errors.New("watermillonce: message has no idempotency key")

// Config tunes Middleware. A nil *Config means the defaults.
type Config struct {
	// Key returns the idempotency key of a message. An error, or an empty
	// or invalid key, dead-letters it as once.ReasonInvalidKey. Defaults to
	// UUIDKey.
	Key func(msg *message.Message) (string, error)
	// Fingerprint returns the digest the key is bound to; nil disables the
	// check. Defaults to PayloadFingerprint.
	Fingerprint func(msg *message.Message) once.Fingerprint
	// MaxRetryDelay caps how long a RetryLater decision waits before the
	// middleware returns (and the router nacks). Defaults to
	// DefaultMaxRetryDelay; a negative value returns at once.
	MaxRetryDelay time.Duration
	// OnDecision, when set, is called with each message's decision.
	// Defaults to nil.
	OnDecision func(msg *message.Message, d once.Decision)
}

// UUIDKey returns the message's UUID; ErrMissingKey when it is empty.
func UUIDKey(msg *message.Message) (string, error) {
	if msg.UUID == "" {
		return "", ErrMissingKey
	}
	return msg.UUID, nil
}

// MetadataKey returns a Config.Key that reads the metadata field name (a
// business key such as an order ID); ErrMissingKey when it is empty.
func MetadataKey(name string) func(*message.Message) (string, error) {
	return func(msg *message.Message) (string, error) {
		if v := msg.Metadata.Get(name); v != "" {
			return v, nil
		}
		return "", ErrMissingKey
	}
}

// PayloadFingerprint is a digest of the message's payload.
func PayloadFingerprint(msg *message.Message) once.Fingerprint {
	return hashers.Parts(msg.Payload)
}

// RetryError is returned for a RetryLater decision: the router nacks the
// message and it is delivered again.
type RetryError struct{ Decision once.Decision }

func (e *RetryError) Error() string {
	return "watermillonce: " + e.Decision.String() + errSuffix(e.Decision.Err)
}

// Unwrap returns the error behind the decision.
func (e *RetryError) Unwrap() error { return e.Decision.Err }

// DeadLetterError is returned for a DeadLetter decision.
type DeadLetterError struct{ Decision once.Decision }

func (e *DeadLetterError) Error() string {
	return "watermillonce: " + e.Decision.String() + errSuffix(e.Decision.Err)
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

// Middleware returns the router middleware that runs each message's
// handler at most once per key in scope (the consumer group or handler
// name), as the package documentation describes.
func Middleware(scope once.Scope, cfg *Config) message.HandlerMiddleware {
	c := Config{Key: UUIDKey, Fingerprint: PayloadFingerprint, MaxRetryDelay: DefaultMaxRetryDelay}
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
		c.OnDecision = cfg.OnDecision
	}
	return func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			produced, d := run(scope, msg, h, c)
			if c.OnDecision != nil {
				c.OnDecision(msg, d)
			}
			switch d.Action {
			case once.Ack:
				return produced, nil
			case once.DeadLetter:
				return nil, &DeadLetterError{Decision: d}
			}
			if wait := min(d.RetryAfter, c.MaxRetryDelay); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-msg.Context().Done():
					t.Stop()
				}
			}
			return nil, &RetryError{Decision: d}
		}
	}
}

func run(scope once.Scope, msg *message.Message, h message.HandlerFunc, c Config) ([]*message.Message, once.Decision) {
	if msg == nil {
		return nil, once.Decision{Action: once.RetryLater, Reason: once.ReasonMisconfigured, Err: errors.New("watermillonce: nil message")}
	}
	key, err := c.Key(msg)
	if err != nil {
		return nil, once.Decision{Action: once.DeadLetter, Reason: once.ReasonInvalidKey, Err: err}
	}
	outer := msg.Context()
	stored, d := once.ConsumeValue(outer, scope, key, c.Fingerprint(msg), func(ctx context.Context) ([]storedMessage, error) {
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
	if d.Action != once.Ack {
		return nil, d
	}
	produced := make([]*message.Message, 0, len(stored))
	for _, s := range stored {
		m := message.NewMessageWithContext(outer, s.UUID, s.Payload)
		for k, v := range s.Metadata {
			m.Metadata.Set(k, v)
		}
		produced = append(produced, m)
	}
	return produced, d
}
