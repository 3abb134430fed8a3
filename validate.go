package once

import (
	"context"
	"unicode"
	"unicode/utf8"

	"github.com/stagedoor/once/backends"
)

// validateName checks a scope or a key. The error never contains the input.
func validateName(field, s string, limit int) error {
	switch {
	case s == "":
		return &InvalidInputError{Field: field, Reason: "empty"}
	case len(s) > limit:
		return &InvalidInputError{Field: field, Reason: "longer than 255 bytes"}
	case !utf8.ValidString(s):
		return &InvalidInputError{Field: field, Reason: "not valid UTF-8"}
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return &InvalidInputError{Field: field, Reason: "contains a control character"}
		}
	}
	return nil
}

// ValidateKey reports whether key is acceptable as an idempotency key: 1 to
// 255 bytes of valid UTF-8 without control characters. It returns an
// *InvalidInputError when it is not. Do calls it; HTTP middleware can call
// it to answer 400 before anything else happens.
func ValidateKey(key string) error { return validateName("key", key, backends.MaxKeyLen) }

func (s Scope) validate(ctx context.Context, key string, fp Fingerprint) error {
	if ctx == nil {
		return &InvalidInputError{Field: "ctx", Reason: "nil"}
	}
	if s.cfg == nil || s.store == nil {
		return &InvalidInputError{Field: "scope", Reason: "zero Scope; use Keeper.Scope"}
	}
	if err := validateName("scope", s.name, backends.MaxScopeLen); err != nil {
		return err
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	if len(fp) > MaxFingerprintLen {
		return &InvalidInputError{Field: "fingerprint", Reason: "longer than 64 bytes"}
	}
	return s.cfg.validate()
}
