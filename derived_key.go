package once

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
)

// DerivedKey returns the idempotency key for an outbound call made on behalf
// of a business object: DerivedKey("order", "9b1e4d3a") is
// "order-9b1e4d3a". Send it to the downstream service (a payment provider)
// so that every attempt of every retry of every restart carries the same
// key and the provider deduplicates them.
//
// Guarantees: the result is a pure function of its inputs; two different
// (namespace, id) pairs never give the same key; the key is at most 255
// bytes of [A-Za-z0-9._:~-]. A namespace of [a-z0-9_.] and an id of
// [A-Za-z0-9._:-] that fit in 255 bytes are joined with "-" as they are;
// anything else (other characters, empty parts, too long) is replaced by a
// "~"-marked SHA-256 digest of both parts, which no plain key contains.
func DerivedKey(namespace, id string) string {
	if plainNamespace(namespace) && plainID(id) && len(namespace)+1+len(id) <= 255 {
		return namespace + "-" + id
	}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(namespace)))])
	h.Write([]byte(namespace))
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(id)))])
	h.Write([]byte(id))
	digest := base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	if plainNamespace(namespace) && len(namespace) <= 200 {
		return namespace + "-~" + digest
	}
	return "~" + digest
}

func plainNamespace(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func plainID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}
