package hashers

import (
	"github.com/stagedoor/once"
)

// jsonTag is the domain tag of JSON digests.
const jsonTag = "once/hashers.JSON/v1"

// JSON returns the SHA-256 fingerprint of the JSON value in data, so that
// two documents denoting the same value get the same digest whatever their
// formatting. The digest ignores insignificant whitespace and object key
// order, compares strings after decoding escapes ("\u00e9" equals "é",
// "\/" equals "/"), and compares numbers by exact decimal value: 1, 1.0,
// 1e0 and 10e-1 are equal, -0 equals 0, while 0.1 and 0.10000000000000001,
// or 2^53 and 2^53+1, differ, as does any pair of different values however
// large, small or long. Anything else is significant: types (1 differs from
// "1" and 1 from true), array order and length, the set of keys.
//
// data must hold exactly one JSON value (RFC 8259) that is also I-JSON
// (RFC 7493): valid UTF-8, no unpaired surrogate escapes, no duplicate key
// in any object, and nesting at most [MaxDepth] (1000) deep. Otherwise JSON
// returns a *JSONError (errors.Is ErrInvalidJSON) and no digest; data after
// the value other than whitespace is an error too. JSON never panics, does
// not retain data and is safe for concurrent use.
//
// Its cost is O(n log n) at most for n = len(data), and O(n) when the keys
// of every object are in byte order: one pass over the input; for each
// object whose keys are not, a sort of its k keys (O(k log k) comparisons,
// each as long as the two keys' common prefix); and then, if any object
// was out of order, one pass that writes the canonical form, copying each
// of its bytes once however deep the nesting. Memory is linear in n.
func JSON(data []byte) (once.Fingerprint, error) {
	c := getCanon(data)
	defer putCanon(c)
	if err := c.document(); err != nil {
		return nil, err
	}
	w := newWriter()
	w.stringPart(jsonTag)
	w.part(c.out)
	return w.sum(), nil
}
