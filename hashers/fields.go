package hashers

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stagedoor/once"
)

// fieldsTag is the domain tag of Fields digests.
const fieldsTag = "once/hashers.Fields/v1"

// Fields returns the SHA-256 fingerprint of the selected fields of the JSON
// object in data, so that a retry may differ in the other fields (a
// client-side timestamp, a trace id) and still match.
//
// A path names a member of the top-level object ("amount") or, with dots,
// a member of nested objects ("customer.id"). Every dot separates two
// keys: there is no escape, so a member whose key contains a dot (the
// "a.b" in {"a.b":1}) cannot be selected, and the path "a.b" hashes as
// missing for that document, whatever the member's value. Array elements
// cannot be addressed either. A path's segments are compared with the
// document's keys after their escapes are decoded, byte for byte: no
// Unicode normalisation ("é" as U+00E9 is not "e" and U+0301). Each selected value
// is canonicalised as [JSON] does. The digest covers the sorted, distinct
// paths, each with its value or the fact that it is missing, so:
//   - the order of paths does not matter, and repeating a path changes
//     nothing;
//   - the path names are part of the digest: {"a":1} under "a" differs from
//     {"b":1} under "b";
//   - a missing field differs from a field that is null; a path through a
//     value that is not an object (or through a missing one) is missing;
//   - changing a field that is not selected does not change the digest.
//
// The whole document is still validated as [JSON] validates it, and must
// be an object; otherwise Fields returns a *JSONError (errors.Is
// ErrInvalidJSON). An empty paths list, a path with an empty segment, or a
// path that is not valid UTF-8 (no key of a valid document can match it)
// returns an error wrapping ErrInvalidPath. Fields does not modify paths.
func Fields(data []byte, paths ...string) (once.Fingerprint, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no paths", ErrInvalidPath)
	}
	for _, p := range paths {
		if p == "" || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
			return nil, fmt.Errorf("%w: %q has an empty segment", ErrInvalidPath, p)
		}
		if !utf8.ValidString(p) {
			return nil, fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidPath, p)
		}
	}
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)

	c := getCanon(data)
	defer putCanon(c)
	if err := c.document(); err != nil {
		return nil, err
	}
	if c.out[0] != tagObject {
		return nil, &JSONError{Offset: 0, Reason: "top-level value is not an object"}
	}

	w := newWriter()
	w.stringPart(fieldsTag)
	for _, p := range sorted {
		w.stringPart(p)
		// A present value's encoding is never empty, so an empty part
		// unambiguously means missing.
		w.part(lookup(c.out, p))
	}
	return w.sum(), nil
}

// lookup returns the canonical encoding of the value at the dotted path in
// the canonical value v, or nil if there is none.
func lookup(v []byte, path string) []byte {
	for {
		seg, rest, more := strings.Cut(path, ".")
		v = memberValue(v, seg)
		if v == nil || !more {
			return v
		}
		path = rest
	}
}

// memberValue returns the encoding of the value of key in the canonical object
// v, or nil if v is not an object or has no such key.
func memberValue(v []byte, key string) []byte {
	if len(v) == 0 || v[0] != tagObject {
		return nil
	}
	i := 1
	for v[i] == tagKey {
		n, w := binary.Uvarint(v[i+1:])
		k := v[i+1+w : i+1+w+int(n)]
		i += 1 + w + int(n)
		end := i + skip(v[i:])
		switch bytes.Compare(k, []byte(key)) {
		case 0:
			return v[i:end]
		case 1:
			return nil // keys are sorted: key is absent
		}
		i = end
	}
	return nil
}

// skip returns the length of the canonical value at the start of v.
func skip(v []byte) int {
	switch v[0] {
	case tagNumber, tagString:
		n, w := binary.Uvarint(v[1:])
		return 1 + w + int(n)
	case tagArray:
		i := 1
		for v[i] != tagEnd {
			i += skip(v[i:])
		}
		return i + 1
	case tagObject:
		i := 1
		for v[i] != tagEnd {
			n, w := binary.Uvarint(v[i+1:])
			i += 1 + w + int(n)
			i += skip(v[i:])
		}
		return i + 1
	default: // null, true, false
		return 1
	}
}
