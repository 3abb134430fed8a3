package memory

import "github.com/stagedoor/once/backends"

// InputError reports a scope or key the Store refuses before it reads or
// changes any record: an empty one, one longer than backends.MaxScopeLen
// or MaxKeyLen bytes, or one backends.NameProblem refuses (invalid UTF-8,
// a control character, NUL included). The core validates the same before
// calling a store, so only a direct caller meets it; without the check
// such a record could be stored, and no List cursor could name it. It
// never contains the value.
type InputError struct {
	// Op is the operation: "claim", "complete", "renew", "release",
	// "hold", "leaseheld", "resolve", "watch", or Admin's "get" and
	// "delete".
	Op string
	// Field is "Scope" or "Key".
	Field string
	// Reason says what is wrong with it, e.g. "empty".
	Reason string
}

// Error implements error.
func (e *InputError) Error() string {
	return "once/memory: " + e.Op + ": invalid " + e.Field + ": " + e.Reason
}

// checkNames returns an *InputError when scope or key is not one a record
// can have; nil, without allocating, when both are.
func checkNames(op, scope, key string) error {
	if r := nameProblem(scope, backends.MaxScopeLen); r != "" {
		return &InputError{Op: op, Field: "Scope", Reason: r}
	}
	if r := nameProblem(key, backends.MaxKeyLen); r != "" {
		return &InputError{Op: op, Field: "Key", Reason: r}
	}
	return nil
}

func nameProblem(s string, limit int) string {
	if s == "" {
		return "empty"
	}
	return backends.NameProblem(s, limit)
}
