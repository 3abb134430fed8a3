package sqlitestore

import "github.com/stagedoor/once/backends"

// matches is the contract's fingerprint predicate: an empty fingerprint on
// either side disables the check; two non-empty ones must be equal
// (compared in constant time).
func matches(stored, given []byte) bool {
	return len(stored) == 0 || backends.FingerprintMatches(stored, given)
}

// bound is the fingerprint a record keeps after a takeover or a resolve
// with given: given when non-empty, else the stored one.
func bound(stored, given []byte) []byte {
	if len(given) == 0 {
		return stored
	}
	return given
}
