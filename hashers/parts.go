package hashers

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/stagedoor/once"
)

// Size is the length in bytes of every fingerprint this package returns.
const Size = sha256.Size

// Parts returns the SHA-256 digest of parts, each preceded by its length
// as an 8-byte big-endian unsigned integer:
//
//	SHA-256( len(p0) ‖ p0 ‖ len(p1) ‖ p1 ‖ … )
//
// The encoding is injective: two different sequences of parts (different
// count, boundaries or bytes) never hash the same input, so ("ab", "c"),
// ("a", "bc"), ("abc") and ("abc", "") all give different digests. A nil
// part and an empty part are the same. The digest is [Size] bytes, and
// the format is fixed, so it can be recomputed in any language.
func Parts(parts ...[]byte) once.Fingerprint {
	w := newWriter()
	for _, p := range parts {
		w.part(p)
	}
	return w.sum()
}

// Strings is [Parts] for strings: Strings("a", "b") equals
// Parts([]byte("a"), []byte("b")).
func Strings(parts ...string) once.Fingerprint {
	w := newWriter()
	for _, p := range parts {
		w.stringPart(p)
	}
	return w.sum()
}

// writer streams length-prefixed parts into a SHA-256 state.
type writer struct {
	h   hash.Hash
	buf [64]byte // length prefixes and string chunks, kept off the interface escape path
}

func newWriter() *writer {
	return &writer{h: sha256.New()}
}

// length writes the 8-byte big-endian length prefix of a part.
func (w *writer) length(n int) {
	binary.BigEndian.PutUint64(w.buf[:8], uint64(n))
	w.h.Write(w.buf[:8])
}

// part writes one length-prefixed part.
func (w *writer) part(p []byte) {
	w.length(len(p))
	w.h.Write(p)
}

// bytePart writes a one-byte part.
func (w *writer) bytePart(b byte) {
	w.length(1)
	w.buf[0] = b
	w.h.Write(w.buf[:1])
}

// stringPart writes one length-prefixed part without converting s to a
// freshly allocated byte slice.
func (w *writer) stringPart(s string) {
	w.length(len(s))
	for len(s) > 0 {
		n := copy(w.buf[:], s)
		w.h.Write(w.buf[:n])
		s = s[n:]
	}
}

func (w *writer) sum() once.Fingerprint {
	return w.h.Sum(make([]byte, 0, Size))
}
