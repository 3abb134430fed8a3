package redisstore

import "github.com/stagedoor/once/backends"

// checkNames returns an *Error of kind ErrInvalid, before anything is sent
// to Redis, when scope or key is not one a record can have: empty, longer
// than backends.MaxScopeLen or MaxKeyLen bytes, or refused by
// backends.NameProblem (invalid UTF-8, a control character, NUL
// included). The core validates the same before calling the store; this
// check keeps such a record, which no List cursor could name, out of the
// keyspace for any other caller. The error never contains the value; nil
// costs no allocation.
func checkNames(op, scope, key string) error {
	if r := nameProblem(scope, backends.MaxScopeLen); r != "" {
		return invalid(op, "scope "+r)
	}
	if r := nameProblem(key, backends.MaxKeyLen); r != "" {
		return invalid(op, "key "+r)
	}
	return nil
}

func nameProblem(s string, limit int) string {
	if s == "" {
		return "empty"
	}
	return backends.NameProblem(s, limit)
}
