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
// and its scope check), so no store holds them; ListParams.Validate refuses
// them as filters.
//
// A control character is one of Unicode's category Cc (unicode.IsControl):
// U+0000 to U+001F, U+007F and U+0080 to U+009F. Everything else that is
// valid UTF-8 passes, format and invisible characters included (U+200B,
// U+202E, U+FEFF, U+00AD), and names are not Unicode-normalised: the NFC
// and NFD spellings of "é" are two different names, which a store keeps
// apart byte for byte.
//
// Every store call checks its scope and key with it, so a name of
// printable ASCII, the common case, costs one pass over its bytes.
func NameProblem(s string, limit int) string {
	if len(s) > limit {
		return "longer than " + strconv.Itoa(limit) + " bytes"
	}
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return ""
	}
	return nonASCIIProblem(s[i:])
}

// nonASCIIProblem is NameProblem's check of the rest of a name from its
// first byte that is not printable ASCII.
func nonASCIIProblem(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	return ""
}
