package postgres

import (
	"strconv"

	"github.com/stagedoor/once/backends"
)

// checkNames refuses, before any statement is sent, a scope or key the
// table must never hold: an empty one, one longer than
// backends.MaxScopeLen or MaxKeyLen bytes or that backends.NameProblem
// refuses (invalid UTF-8, which the server would refuse with SQLSTATE
// 22021, a NUL byte, which text cannot hold, or another control
// character, which no List cursor could name). The core validates the
// same before calling the store; this check keeps the table consistent
// for any other caller, in Go rather than as CHECK constraints, which
// PostgreSQL would prepare on every insert and update. The error is an
// *Error naming the field, never its value.
func checkNames(op, scope, key string) error {
	switch {
	case scope == "" || len(scope) > backends.MaxScopeLen:
		return invalidInput(op, "scope must be 1 to "+strconv.Itoa(backends.MaxScopeLen)+" bytes")
	case key == "" || len(key) > backends.MaxKeyLen:
		return invalidInput(op, "key must be 1 to "+strconv.Itoa(backends.MaxKeyLen)+" bytes")
	}
	if r := backends.NameProblem(scope, backends.MaxScopeLen); r != "" {
		return invalidInput(op, "scope "+r)
	}
	if r := backends.NameProblem(key, backends.MaxKeyLen); r != "" {
		return invalidInput(op, "key "+r)
	}
	return nil
}

// checkInput refuses, before any statement is sent, what checkNames
// refuses, an owner token backends.OwnerProblem refuses (empty on any
// operation but "resolve", longer than backends.MaxOwnerLen bytes, invalid
// UTF-8 or NUL, which the owner column, text, cannot hold) and a
// fingerprint longer than backends.MaxFingerprintLen bytes (see "Inputs"
// in package backends), with an *Error naming the field, never its value.
func checkInput(op, scope, key string, fp []byte, owner string) error {
	if err := checkNames(op, scope, key); err != nil {
		return err
	}
	if r := backends.OwnerProblem(owner, op != "resolve"); r != "" {
		return invalidInput(op, "owner "+r)
	}
	if r := backends.FingerprintProblem(fp); r != "" {
		return invalidInput(op, "fingerprint "+r)
	}
	return nil
}

func invalidInput(op, what string) error {
	return &Error{Op: op, kind: "invalid input: " + what}
}
