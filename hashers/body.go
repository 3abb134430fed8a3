package hashers

import (
	"bytes"
	"fmt"
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
		return nil, fmt.Errorf("hashers: reading request body: %w", err)
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

// readLimited reads src to EOF, but at most limit+1 bytes when limit is
// not negative, so that a body one byte over the cap is detected without
// reading the rest. sizeHint (a Content-Length, -1 if unknown) sizes the
// buffer so a body of declared length is read with one allocation.
func readLimited(src io.Reader, limit, sizeHint int64) ([]byte, error) {
	if limit == math.MaxInt64 {
		limit = -1 // limit+1 would overflow; no body is that long anyway
	}
	size := int64(512)
	if sizeHint >= 0 {
		// Trust a declared length up to the cap (or 1 MiB when uncapped);
		// +1 leaves room to observe EOF without growing.
		size = min(sizeHint, DefaultMaxBody) + 1
		if limit >= 0 {
			size = min(sizeHint, limit) + 1
		}
	}
	if limit >= 0 {
		src = io.LimitReader(src, limit+1)
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
			b = append(b, 0)[:len(b)]
		}
	}
}

// restoredBody replays the bytes Hash read (and, after an error, the rest
// of the original body); closing it closes the original body.
type restoredBody struct {
	io.Reader
	orig io.ReadCloser
}

func (b *restoredBody) Close() error { return b.orig.Close() }
