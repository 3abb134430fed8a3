package sqlitestore

import (
	"strings"

	"github.com/stagedoor/once/backends"
)

// checkNames returns an *Error, before any statement, when scope or key is
// not one a record can have: empty, longer than backends.MaxScopeLen or
// MaxKeyLen bytes, or refused by backends.NameProblem (invalid UTF-8, a
// control character, NUL included). The core validates the same before
// calling the store; this check keeps such a row, which no List cursor
// could name, out of the table for any other caller. The error names the
// field, never its value; nil costs no allocation.
func checkNames(op, scope, key string) error {
	if r := nameProblem(scope, backends.MaxScopeLen); r != "" {
		return &Error{Op: op, kind: "invalid input: scope " + r}
	}
	if r := nameProblem(key, backends.MaxKeyLen); r != "" {
		return &Error{Op: op, kind: "invalid input: key " + r}
	}
	return nil
}

// checkWrite returns an *Error, before any statement, when scope or key is
// not one a record can have (checkNames), or owner or fp is not one a call
// may send (see "Inputs" in package backends): an owner token that
// backends.OwnerProblem refuses (empty on any operation but "resolve",
// longer than backends.MaxOwnerLen bytes, not valid UTF-8, or holding a
// NUL byte), a fingerprint longer than
// backends.MaxFingerprintLen bytes. nil costs no allocation.
func checkWrite(op, scope, key, owner string, fp []byte) error {
	if err := checkNames(op, scope, key); err != nil {
		return err
	}
	if r := backends.OwnerProblem(owner, op != "resolve"); r != "" {
		return &Error{Op: op, kind: "invalid input: owner " + r}
	}
	if r := backends.FingerprintProblem(fp); r != "" {
		return &Error{Op: op, kind: "invalid input: fingerprint " + r}
	}
	return nil
}

// checkHeld returns an *Error, before any statement, when a hold's code
// or message is one backends.HeldProblem refuses (longer than
// backends.MaxHeldCodeLen or MaxHeldMessageLen bytes, not valid UTF-8, or
// containing NUL: see "Inputs" in package backends). nil costs no
// allocation.
func checkHeld(op, code, message string) error {
	if field, r := backends.HeldProblem(code, message); r != "" {
		return &Error{Op: op, kind: "invalid input: " + strings.ToLower(field) + " " + r}
	}
	return nil
}

func nameProblem(s string, limit int) string {
	if s == "" {
		return "empty"
	}
	return backends.NameProblem(s, limit)
}
