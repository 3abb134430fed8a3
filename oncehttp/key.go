package oncehttp

import (
	"errors"
	"net/http"

	"github.com/stagedoor/once"
)

var (
	errNoKey      = errors.New("no key")
	errInvalidKey = errors.New("invalid key")
)

// maxKeyLen is the longest key accepted, in bytes (the store's limit).
const maxKeyLen = 255

// requestKey returns the idempotency key of r from the header named name
// (canonical form). It accepts a bare value or an RFC 8941 sf-string
// ("quoted", with \" and \\ escapes), as the draft defines the header. It
// returns errNoKey when the header is absent and errInvalidKey when it is
// repeated, empty, longer than 255 bytes or not printable ASCII.
func requestKey(r *http.Request, name string) (string, error) {
	vals := r.Header[name]
	switch len(vals) {
	case 0:
		return "", errNoKey
	case 1:
	default:
		return "", errInvalidKey
	}
	key, ok := unquote(vals[0])
	if !ok || len(key) == 0 || len(key) > maxKeyLen {
		return "", errInvalidKey
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			return "", errInvalidKey
		}
	}
	if once.ValidateKey(key) != nil { // belt and braces: the core's rules
		return "", errInvalidKey
	}
	return key, nil
}

// unquote returns v without its quotes when v is an sf-string, v itself
// when it is not quoted, and ok false for a malformed sf-string.
func unquote(v string) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return v, true
	}
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	hasEscape := false
	for i := 0; i < len(inner); i++ {
		switch inner[i] {
		case '"':
			return "", false
		case '\\':
			hasEscape = true
			i++
			if i == len(inner) || (inner[i] != '"' && inner[i] != '\\') {
				return "", false
			}
		}
	}
	if !hasEscape {
		return inner, true
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' {
			i++
		}
		out = append(out, inner[i])
	}
	return string(out), true
}
