package natsonce

import (
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// ErrMissingKey: the message carries no idempotency key. Process
// terminates it with once.ReasonInvalidKey.
var ErrMissingKey = errors.New("natsonce: message has no idempotency key")

// MsgIDKey returns the message's Nats-Msg-Id header, the ID its publisher
// gave it; ErrMissingKey when it has none.
func MsgIDKey(msg jetstream.Msg) (string, error) { return HeaderKey(nats.MsgIdHdr)(msg) }

// HeaderKey returns a Config.Key that reads the header name (a business
// key such as an order ID); ErrMissingKey when it is absent or empty.
func HeaderKey(name string) func(jetstream.Msg) (string, error) {
	return func(msg jetstream.Msg) (string, error) {
		if v := msg.Headers().Get(name); v != "" {
			return v, nil
		}
		return "", ErrMissingKey
	}
}

// PayloadFingerprint is a digest of the message's subject and data.
func PayloadFingerprint(msg jetstream.Msg) once.Fingerprint {
	return hashers.Parts([]byte(msg.Subject()), msg.Data())
}
