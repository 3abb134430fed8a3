package once

import (
	"crypto/rand"
	"encoding/base64"
)

// newToken returns a random 128-bit owner token, in 22 characters of
// unpadded base64url (A–Z, a–z, 0–9, '-', '_'). Tokens fence every write
// after a claim, so they must never repeat: crypto/rand makes collisions
// impossible in practice. Every store keeps the token with the record it
// claimed, in each version of its row: the short form keeps that row
// small.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b[:])
}
