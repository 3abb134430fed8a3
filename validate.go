package once

import (
	"context"
	"strconv"

	"github.com/stagedoor/once/backends"
)

// validateName checks a scope or a key. The error never contains the input.
func validateName(field, s string, limit int) error {
	if s == "" {
		return &InvalidInputError{Field: field, Reason: "empty"}
	}
	if reason := backends.NameProblem(s, limit); reason != "" {
		return &InvalidInputError{Field: field, Reason: reason}
	}
	return nil
}

// ValidateKey reports whether key is acceptable as an idempotency key: 1 to
// backends.MaxKeyLen (255) bytes of valid UTF-8 without control
// characters. It returns an *InvalidInputError (Field "key") when it is
// not. Do calls it; HTTP middleware can call it to answer 400 before
// anything else happens.
//
// Control characters are Unicode's category Cc only: U+0000 to U+001F,
// U+007F and U+0080 to U+009F. Every other code point is accepted,
// invisible and format characters included: U+200B ZERO WIDTH SPACE,
// U+202E RIGHT-TO-LEFT OVERRIDE, U+FEFF (a byte order mark, even at the
// start), U+2028, U+00AD SOFT HYPHEN, private-use and unassigned code
// points. Keys are compared byte for byte and never Unicode-normalised:
// "é" written as U+00E9 (NFC) and as "e" followed by U+0301 (NFD) are two
// different keys, as are keys differing only in case or by an invisible
// character. A caller that takes keys from people, not programs, and wants
// them to match must normalise them itself before calling Do.
func ValidateKey(key string) error { return validateName("key", key, backends.MaxKeyLen) }

// validateScope reports whether name is acceptable as a scope name, by the
// rules of ValidateKey (control characters are Unicode's Cc only; no
// normalisation) and backends.MaxScopeLen (255 bytes). It returns an
// *InvalidInputError (Field "scope") when it is not.
func validateScope(name string) error { return validateName("scope", name, backends.MaxScopeLen) }

// validateFingerprint reports whether fp is acceptable: at most
// backends.MaxFingerprintLen (64) bytes; empty means no check. It returns
// an *InvalidInputError (Field "fingerprint") when it is not.
func validateFingerprint(fp Fingerprint) error {
	if len(fp) > backends.MaxFingerprintLen {
		return &InvalidInputError{Field: "fingerprint", Reason: "longer than " + strconv.Itoa(backends.MaxFingerprintLen) + " bytes"}
	}
	return nil
}

// validateContext refuses a nil ctx, as every call that takes a context
// does, with an *InvalidInputError (Field "ctx").
func validateContext(ctx context.Context) error {
	if ctx == nil {
		return &InvalidInputError{Field: "ctx", Reason: "nil"}
	}
	return nil
}

func (s Scope) validate(ctx context.Context, key string, fp Fingerprint) error {
	if err := validateContext(ctx); err != nil {
		return err
	}
	if s.cfg == nil || s.store == nil {
		return &InvalidInputError{Field: "scope", Reason: "zero Scope; use Keeper.Scope"}
	}
	if err := validateScope(s.name); err != nil {
		return err
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := validateFingerprint(fp); err != nil {
		return err
	}
	return s.cfg.validate()
}
