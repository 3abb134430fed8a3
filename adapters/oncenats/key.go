package oncenats

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/hashers"
)

// ErrMissingKey: the message carries no idempotency key. Process
// terminates it with consume.ReasonInvalidKey.
var ErrMissingKey = errors.New("oncenats: message has no idempotency key")

// MsgIDKey returns the key of the message's stream and its Nats-Msg-Id
// header, the ID its publisher gave it: "<stream>.<id>" ("ORDERS.order-1").
// JetStream deduplicates a Nats-Msg-Id within one stream only, so the same
// ID published to two streams read by one scope names two messages; the
// stream name, which never contains a dot, keeps their keys apart. When
// "<stream>.<id>" is over 255 bytes the key is instead "~" and the
// unpadded base64url SHA-256 of the length-prefixed stream and ID, which
// contains no dot, so two different (stream, ID) pairs never share a key.
//
// It returns ErrMissingKey when the header is absent or empty, the
// once.ValidateKey error of an ID no key may be (over 255 bytes, not
// UTF-8, control characters), and an error when the message carries no
// JetStream metadata. For the ID alone as the key (one stream per scope,
// or keys stored before the stream was part of them), use
// HeaderKey(nats.MsgIdHdr).
func MsgIDKey(msg jetstream.Msg) (string, error) {
	id, err := HeaderKey(nats.MsgIdHdr)(msg)
	if err != nil {
		return "", err
	}
	if err := once.ValidateKey(id); err != nil {
		return "", err
	}
	md, err := msg.Metadata()
	if err != nil {
		return "", fmt.Errorf("oncenats: message has no JetStream metadata for its key: %w", err)
	}
	return streamKey(md.Stream, id), nil
}

// streamKey joins a stream name (no dots, as JetStream's acknowledgement
// subjects require) and an ID injectively, in at most 255 bytes.
func streamKey(stream, id string) string {
	if k := stream + "." + id; len(k) <= 255 {
		return k
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s", len(stream), stream, len(id), id)
	return "~" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

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
