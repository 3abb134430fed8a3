package once

// Fingerprint is a digest of the request an idempotency key was sent with.
// A retry that reuses a key with another fingerprint is a client bug and gets
// ErrKeyReused instead of the stored outcome.
//
// Only the digest is stored, at most backends.MaxFingerprintLen (64) bytes
// (package hashers makes them). An empty fingerprint means "no check", on
// either side: a call without one matches any record, and a record stored
// without one matches any call. Fingerprints are compared in constant time.
type Fingerprint []byte
