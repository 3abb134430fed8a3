package main

import (
	"encoding/hex"
	"strconv"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// target is the SCOPE KEY pair of get, delete and resolve.
type target struct {
	Scope string `arg:"" help:"Scope: the caller, consumer group or job the key belongs to."`
	Key   string `arg:"" help:"Idempotency key."`
}

// validate applies the core's rules (once.ValidateKey: 1 to 255 bytes of
// valid UTF-8 without control characters) to both,
// before any store call. A failure is a usage error wrapping an
// *once.InvalidInputError whose Field is "scope" or "key"; the message
// never echoes the input.
func (t target) validate() error {
	if err := validName("scope", t.Scope, backends.MaxScopeLen); err != nil {
		return usage(err)
	}
	if err := once.ValidateKey(t.Key); err != nil {
		return usage(err)
	}
	return nil
}

// validName applies the rules of once.ValidateKey to field s, up to limit
// bytes, with an *once.InvalidInputError that never echoes s.
func validName(field, s string, limit int) error {
	reason := backends.NameProblem(s, limit)
	if s == "" {
		reason = "empty"
	}
	if reason != "" {
		return &once.InvalidInputError{Field: field, Reason: reason}
	}
	return nil
}

// parseFingerprint decodes a --fingerprint flag: hex, at most
// backends.MaxFingerprintLen bytes. Empty means none.
func parseFingerprint(s string) (once.Fingerprint, error) {
	if s == "" {
		return nil, nil
	}
	fp, err := hex.DecodeString(s)
	if err != nil {
		return nil, usage(&once.InvalidInputError{Field: "fingerprint", Reason: "not hexadecimal"})
	}
	if len(fp) > backends.MaxFingerprintLen {
		return nil, usage(&once.InvalidInputError{Field: "fingerprint", Reason: "longer than " + strconv.Itoa(backends.MaxFingerprintLen) + " bytes"})
	}
	return fp, nil
}
