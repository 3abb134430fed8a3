package hashers

import (
	"bytes"
	"io"
	"math"
	"net/http"
)

// readBody reads r.Body up to limit bytes (no limit when negative) and
// restores it; see RequestHasher.Hash for what r looks like afterwards.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if limit >= 0 && r.ContentLength > limit {
		// Declared too large: refuse before reading, so r.Body is untouched.
		return nil, &BodyTooLargeError{Limit: limit}
	}

	orig := r.Body
	b, err := readLimited(orig, limit, r.ContentLength)
	if err != nil {
		r.Body = &restoredBody{Reader: io.MultiReader(bytes.NewReader(b), orig), orig: orig}
		return nil, &BodyReadError{Err: err}
	}
	if limit >= 0 && int64(len(b)) > limit {
		r.Body = &restoredBody{Reader: io.MultiReader(bytes.NewReader(b), orig), orig: orig}
		return nil, &BodyTooLargeError{Limit: limit}
	}
	r.Body = &restoredBody{Reader: bytes.NewReader(b), orig: orig}
	r.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return b, nil
}

// initialBuffer bounds the buffer readLimited starts with: a declared
// Content-Length is a promise the client need not keep, so it is trusted
// only as bytes arrive.
const initialBuffer = 64 << 10

// readLimited reads src to EOF, but at most limit+1 bytes when limit is
// not negative, so that a body one byte over the cap is detected without
// reading the rest. sizeHint (a Content-Length, -1 if unknown) sizes the
// first buffer up to initialBuffer; the buffer then doubles as bytes
// arrive, its last growth stopping at the declared length, so a truthful
// Content-Length ends in a buffer of exactly its size plus one (room to
// observe EOF), and a client declaring 1 MiB and sending 1 byte costs
// 64 KiB, not 1 MiB.
func readLimited(src io.Reader, limit, sizeHint int64) ([]byte, error) {
	if limit == math.MaxInt64 {
		limit = -1 // limit+1 would overflow; no body is that long anyway
	}
	// want is the size of a buffer that holds the whole body and room to
	// observe EOF, when a declared length or the cap tells it.
	declared := sizeHint >= 0 && sizeHint < math.MaxInt64 // sizeHint+1 must not overflow
	want := int64(-1)
	if declared {
		want = sizeHint + 1
	}
	if limit >= 0 {
		src = io.LimitReader(src, limit+1)
		if want < 0 || want > limit+1 {
			want = limit + 1
		}
	}
	size := int64(512)
	if declared {
		size = min(want, initialBuffer+1)
	}
	b := make([]byte, 0, size)
	for {
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = grow(b, want)
		}
	}
}

// grow returns b with its capacity doubled, or raised to want when that is
// larger than cap(b) but less than double, so the last growth of a body of
// known length allocates exactly what is left.
func grow(b []byte, want int64) []byte {
	size := 2 * int64(cap(b))
	if int64(cap(b)) < want && want < size {
		size = want
	}
	nb := make([]byte, len(b), max(size, 512))
	copy(nb, b)
	return nb
}

// restoredBody replays the bytes Hash read (and, after an error, the rest
// of the original body); closing it closes the original body.
type restoredBody struct {
	io.Reader
	orig io.ReadCloser
}

func (b *restoredBody) Close() error { return b.orig.Close() }
