package mysqlstore

import (
	"fmt"

	"github.com/stagedoor/once/backends"
)

// InputError reports a parameter the Store refuses before sending it (see
// "Inputs" in package backends): the core validates scopes, keys and
// fingerprints first, and sends owner tokens of 32 bytes, so only a direct
// caller of the Store meets it. The columns are sized to the contract's
// limits, and INSERT IGNORE would otherwise truncate an oversized value
// silently instead of failing. A scope or key backends.NameProblem refuses
// (invalid UTF-8, control characters) is refused too: no record of the
// contract has one, and no List cursor could name it.
type InputError struct {
	// Op is the operation, as in Error.Op.
	Op string
	// Field is "Scope", "Key", "Fingerprint", "Owner", or Hold's "Code"
	// or "Message" (which backends.HeldProblem refuses).
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *InputError) Error() string {
	return fmt.Sprintf("once/mysql: %s: invalid %s: %s", e.Op, e.Field, e.Reason)
}

// checkInput refuses a scope or key no record can have, a fingerprint
// backends.FingerprintProblem refuses, and an owner token
// backends.OwnerProblem refuses (ownerRequired on every operation but
// Resolve, Admin's Get and Delete, which pass none).
func checkInput(op, scope, key string, fp []byte, owner string, ownerRequired bool) error {
	switch {
	case scope == "":
		return &InputError{Op: op, Field: "Scope", Reason: "empty"}
	case len(scope) > backends.MaxScopeLen:
		return &InputError{Op: op, Field: "Scope", Reason: fmt.Sprintf("longer than %d bytes", backends.MaxScopeLen)}
	case key == "":
		return &InputError{Op: op, Field: "Key", Reason: "empty"}
	case len(key) > backends.MaxKeyLen:
		return &InputError{Op: op, Field: "Key", Reason: fmt.Sprintf("longer than %d bytes", backends.MaxKeyLen)}
	case backends.NameProblem(scope, backends.MaxScopeLen) != "":
		return &InputError{Op: op, Field: "Scope", Reason: backends.NameProblem(scope, backends.MaxScopeLen)}
	case backends.NameProblem(key, backends.MaxKeyLen) != "":
		return &InputError{Op: op, Field: "Key", Reason: backends.NameProblem(key, backends.MaxKeyLen)}
	case backends.FingerprintProblem(fp) != "":
		return &InputError{Op: op, Field: "Fingerprint", Reason: backends.FingerprintProblem(fp)}
	}
	if r := backends.OwnerProblem(owner, ownerRequired); r != "" {
		return &InputError{Op: op, Field: "Owner", Reason: r}
	}
	return nil
}

// nonNil returns b, or an empty slice for nil, so that the driver sends an
// empty string instead of NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
