package main

import (
	"encoding/hex"

	"github.com/stagedoor/once"
)

// target is the SCOPE KEY pair of get, delete and resolve.
type target struct {
	Scope string `arg:"" help:"Scope: the caller, consumer group or job the key belongs to."`
	Key   string `arg:"" help:"Idempotency key."`
}

// validate applies the core's rules (once.ValidateScope, once.ValidateKey:
// 1 to 255 bytes of valid UTF-8 without control characters) to both,
// before any store call. A failure is a usage error wrapping an
// *once.InvalidInputError whose Field is "scope" or "key"; the message
// never echoes the input.
func (t target) validate() error {
	if err := once.ValidateScope(t.Scope); err != nil {
		return usage(err)
	}
	if err := once.ValidateKey(t.Key); err != nil {
		return usage(err)
	}
	return nil
}

// parseFingerprint decodes a --fingerprint flag: hex, valid for
// once.ValidateFingerprint. Empty means none.
func parseFingerprint(s string) (once.Fingerprint, error) {
	if s == "" {
		return nil, nil
	}
	fp, err := hex.DecodeString(s)
	if err != nil {
		return nil, usage(&once.InvalidInputError{Field: "fingerprint", Reason: "not hexadecimal"})
	}
	if err := once.ValidateFingerprint(fp); err != nil {
		return nil, usage(err)
	}
	return fp, nil
}
