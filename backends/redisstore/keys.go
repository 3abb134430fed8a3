package redisstore

import (
	"fmt"
	"strconv"
	"strings"
)

// KeyPrefixError reports a Config.KeyPrefix that New refuses, before
// sending anything: one containing "{" (see Config.KeyPrefix).
type KeyPrefixError struct {
	// Prefix is the refused prefix.
	Prefix string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *KeyPrefixError) Error() string {
	return fmt.Sprintf("once/redisstore: invalid KeyPrefix %q: %s", e.Prefix, e.Reason)
}

// checkKeyPrefix refuses a prefix containing "{": recordKey's encoding is
// injective for one prefix, but a prefix that is another's followed by
// "{" and more can write the other's keys (see Config.KeyPrefix), and a
// "{...}" pair in it would be every record's Cluster hash tag.
func checkKeyPrefix(prefix string) error {
	if strings.Contains(prefix, "{") {
		return &KeyPrefixError{Prefix: prefix, Reason: `contains "{"`}
	}
	return nil
}

// recordKey returns the Redis key of the record of (scope, key):
//
//	prefix + "{" + len(s) + ":" + s + ":" + k + "}"
//
// where s and k are scope and key with "%" and "}" percent-encoded, and
// len(s) is the decimal byte length of s. The encoding is injective: the
// length delimits the scope, and since neither s nor k contains "}", the
// braces enclose the whole (scope, key) pair, which is therefore the key's
// Redis Cluster hash tag. Different pairs hash across all slots (a "}"
// inside a scope or key cannot truncate the tag and crowd one slot), while
// a record and its notification channel, which share this string, share a
// slot. Scope "a:b" with key "c" becomes "{3:a:b:c}", scope "a" with key
// "b:c" becomes "{1:a:b:c}".
func recordKey(prefix, scope, key string) string {
	return keyWith(prefix, scope, key, "")
}

// stepsSuffix follows a record's key in the key of its checkpoints (see
// recordKeys).
const stepsSuffix = ":steps"

// recordKeys returns the Redis key of the record of (scope, key), as
// recordKey, and that of its checkpoints: the record's key followed by
// ":steps", built as one string of which the record's key is a prefix.
// The checkpoints key has the record's hash tag (its first "{...}"), so
// it lives in the record's Cluster slot; it never equals a record key of
// any prefix (those end in "}"), and List's SCAN pattern, which ends in
// "}", skips it.
func recordKeys(prefix, scope, key string) (record, steps string) {
	steps = keyWith(prefix, scope, key, stepsSuffix)
	return steps[:len(steps)-len(stepsSuffix)], steps
}

// keyWith returns recordKey(prefix, scope, key) followed by suffix.
func keyWith(prefix, scope, key, suffix string) string {
	var buf [128]byte
	return string(appendKey(buf[:0], prefix, scope, key, suffix))
}

// appendKey appends recordKey(prefix, scope, key) followed by suffix to b:
// the one encoding of record keys, which the hot commands write straight
// into their arguments (claimArgs, completeArgs).
func appendKey(b []byte, prefix, scope, key, suffix string) []byte {
	b = append(b, prefix...)
	b = append(b, '{')
	b = strconv.AppendInt(b, int64(escapedLen(scope)), 10)
	b = append(b, ':')
	b = appendEscaped(b, scope)
	b = append(b, ':')
	b = appendEscaped(b, key)
	b = append(b, '}')
	return append(b, suffix...)
}

// escape percent-encodes "%" and "}" so that the result never contains
// "}" and decodes unambiguously. Other bytes, including "{", "*" and ":",
// are kept: they are harmless inside a key and keep keys readable.
func escape(s string) string {
	if escapedLen(s) == len(s) {
		return s
	}
	return string(appendEscaped(make([]byte, 0, escapedLen(s)), s))
}

// escapedLen is len(escape(s)).
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '}' {
			n += 2
		}
	}
	return n
}

// appendEscaped appends escape(s) to b.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '%':
			b = append(b, "%25"...)
		case '}':
			b = append(b, "%7D"...)
		default:
			b = append(b, c)
		}
	}
	return b
}
