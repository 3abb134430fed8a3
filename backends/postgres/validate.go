package postgres

import (
	"strconv"

	"github.com/stagedoor/once/backends"
)

// maxOwnerLen bounds an owner token.
const maxOwnerLen = 255

// checkInput refuses, before any statement is sent, what the table must
// never hold: an empty scope or key, one longer than backends.MaxScopeLen
// or MaxKeyLen bytes or that backends.NameProblem refuses (invalid UTF-8,
// which the server would refuse with SQLSTATE 22021, a NUL byte, which
// text cannot hold, or another control character, which no List cursor
// could name), a fingerprint longer than MaxFingerprintLen, an owner
// token longer than 255 bytes. The core validates the same before calling
// the store; this check keeps the table consistent for any other caller,
// in Go rather than as CHECK constraints, which PostgreSQL would prepare
// on every insert and update. The error is an *Error naming the field,
// never its value.
func checkInput(op, scope, key string, fp []byte, owner string) error {
	bad := func(what string) error { return &Error{Op: op, kind: "invalid input: " + what} }
	switch {
	case scope == "" || len(scope) > backends.MaxScopeLen:
		return bad("scope must be 1 to " + strconv.Itoa(backends.MaxScopeLen) + " bytes")
	case key == "" || len(key) > backends.MaxKeyLen:
		return bad("key must be 1 to " + strconv.Itoa(backends.MaxKeyLen) + " bytes")
	case backends.NameProblem(scope, backends.MaxScopeLen) != "":
		return bad("scope " + backends.NameProblem(scope, backends.MaxScopeLen))
	case backends.NameProblem(key, backends.MaxKeyLen) != "":
		return bad("key " + backends.NameProblem(key, backends.MaxKeyLen))
	case len(fp) > backends.MaxFingerprintLen:
		return bad("fingerprint longer than " + strconv.Itoa(backends.MaxFingerprintLen) + " bytes")
	case len(owner) > maxOwnerLen:
		return bad("owner token longer than " + strconv.Itoa(maxOwnerLen) + " bytes")
	}
	return nil
}
