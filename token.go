package once

import (
	"crypto/rand"
	"encoding/hex"
)

// newToken returns a random 128-bit owner token. Tokens fence every write
// after a claim, so they must never repeat: crypto/rand makes collisions
// impossible in practice.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}
