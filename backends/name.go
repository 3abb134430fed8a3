package backends

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// NameProblem returns why s cannot be a scope or a key of at most limit
// bytes, nor the start of one: "longer than N bytes", "not valid UTF-8"
// or "contains a control character" (NUL included); "" when it can. It
// does not refuse the empty string, whose meaning is the caller's. The
// core refuses such scopes and keys before any store call (once.ValidateKey
// and ValidateScope), so no store holds them; ListParams.Validate refuses
// them as filters.
func NameProblem(s string, limit int) string {
	switch {
	case len(s) > limit:
		return "longer than " + strconv.Itoa(limit) + " bytes"
	case !utf8.ValidString(s):
		return "not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	return ""
}
