package memory

import "github.com/stagedoor/once/backends"

// InputError reports a parameter the Store refuses before it reads or
// changes any record (see "Inputs" in package backends): a scope or key
// that is empty, longer than backends.MaxScopeLen or MaxKeyLen bytes, or
// that backends.NameProblem refuses (invalid UTF-8, a control character,
// NUL included); an owner token that backends.OwnerProblem refuses (empty
// on any operation but Resolve, longer than backends.MaxOwnerLen bytes,
// invalid UTF-8, NUL);
// a fingerprint longer than backends.MaxFingerprintLen bytes; a held code
// or message that backends.HeldProblem refuses (too long, invalid UTF-8,
// NUL). The core
// never sends them, so only a direct caller meets it; without the check
// such a record could be stored, and no List cursor could name it. It
// never contains the value.
type InputError struct {
	// Op is the operation: "claim", "complete", "renew", "release",
	// "hold", "leaseheld", "resolve", "watch", or Admin's "get" and
	// "delete".
	Op string
	// Field is "Scope", "Key", "Owner", "Fingerprint", or Hold's "Code"
	// or "Message".
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

// checkWrite returns an *InputError when scope or key is not one a record
// can have (checkNames), or owner or fp is not one a call may send:
// backends.OwnerProblem (an owner is required on every operation but
// "resolve") or backends.FingerprintProblem. nil, without allocating,
// when all are.
func checkWrite(op, scope, key, owner string, fp []byte) error {
	if err := checkNames(op, scope, key); err != nil {
		return err
	}
	if r := backends.OwnerProblem(owner, op != "resolve"); r != "" {
		return &InputError{Op: op, Field: "Owner", Reason: r}
	}
	if r := backends.FingerprintProblem(fp); r != "" {
		return &InputError{Op: op, Field: "Fingerprint", Reason: r}
	}
	return nil
}

func nameProblem(s string, limit int) string {
	if s == "" {
		return "empty"
	}
	return backends.NameProblem(s, limit)
}
