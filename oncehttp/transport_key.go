package oncehttp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
)

// ErrInvalidKey is returned (wrapped) by Transport.RoundTrip, before
// anything is sent, for a key that no server following the draft accepts:
// empty, over 255 bytes or not printable ASCII.
var ErrInvalidKey = errors.New("oncehttp: invalid idempotency key")

type clientKey struct{}

// WithKey returns a context that makes a Transport send key as the
// idempotency key of the requests made with it, on every attempt. Make the
// key where the intent is born and keep it with the intent (a database
// row, a job's arguments), or derive it from the business object
// (once.DerivedKey), so that a retry of the whole operation, after a
// crash, sends the same key. Inside a handler guarded by the Middleware,
// derive it from Key and ScopeName.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, clientKey{}, key)
}

// NewKey returns a fresh random idempotency key: 128 bits from
// crypto/rand, 22 base64url characters.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// keyFor returns the key of req and the header value that carries it.
func (t *Transport) keyFor(req *http.Request, header string) (key, value string, err error) {
	if vals := req.Header.Values(header); len(vals) > 0 {
		// The caller's own header: sent as it is.
		if len(vals) > 1 {
			return "", "", errors.Join(ErrInvalidKey, errors.New("the header is repeated"))
		}
		k, ok := unquote(vals[0])
		if !ok || !validClientKey(k) {
			return "", "", ErrInvalidKey
		}
		return k, vals[0], nil
	}
	key, ok := req.Context().Value(clientKey{}).(string)
	if !ok {
		newKey := t.NewKey
		if newKey == nil {
			newKey = NewKey
		}
		key = newKey()
	}
	if !validClientKey(key) {
		return "", "", ErrInvalidKey
	}
	if t.Bare {
		return key, key, nil
	}
	return key, quote(key), nil
}

func validClientKey(k string) bool {
	if len(k) == 0 || len(k) > maxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// quote returns k as an RFC 8941 sf-string.
func quote(k string) string {
	if !strings.ContainsAny(k, `"\`) {
		return `"` + k + `"`
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(k); i++ {
		if k[i] == '"' || k[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(k[i])
	}
	b.WriteByte('"')
	return b.String()
}
