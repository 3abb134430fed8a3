package once

import "github.com/stagedoor/once/backends"

// Fingerprint is a digest of the request an idempotency key was sent with.
// A retry that reuses a key with another fingerprint is a client bug and gets
// ErrKeyReused instead of the stored outcome.
//
// Only the digest is stored, at most 64 bytes (package hashers makes them).
// The zero value (nil or empty) disables the check for the call that passes
// it. Fingerprints are compared in constant time.
type Fingerprint []byte

// MaxFingerprintLen is the largest accepted fingerprint, in bytes.
const MaxFingerprintLen = backends.MaxFingerprintLen
