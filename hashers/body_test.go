package hashers

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trickle yields n bytes, one per Read, then err (io.EOF when nil).
type trickle struct {
	n   int
	err error
}

func (r *trickle) Read(p []byte) (int, error) {
	if r.n == 0 {
		if r.err == nil {
			return 0, io.EOF
		}
		return 0, r.err
	}
	r.n--
	p[0] = 'x'
	return 1, nil
}

func (r *trickle) Close() error { return nil }

// TestReadLimitedTrustsContentLengthAsBytesArrive: a declared length sizes
// the first buffer only up to initialBuffer, so a client declaring 1 MiB
// and sending one byte reserves 64 KiB (it reserved the whole MiB); a body
// that keeps its promise still ends in a buffer of its size plus one.
func TestReadLimitedTrustsContentLengthAsBytesArrive(t *testing.T) {
	b, err := readLimited(&trickle{n: 1, err: io.ErrUnexpectedEOF}, DefaultMaxBody, DefaultMaxBody)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, "x", string(b))
	assert.LessOrEqual(t, cap(b), initialBuffer+1)

	for _, n := range []int{0, 1, 511, 512, 513, initialBuffer, initialBuffer + 1, 100 << 10, DefaultMaxBody} {
		body := bytes.Repeat([]byte("y"), n)
		b, err := readLimited(bytes.NewReader(body), DefaultMaxBody, int64(n))
		require.NoError(t, err)
		assert.Equal(t, n, len(b))
		assert.Equal(t, n+1, cap(b), "declared %d", n)

		b, err = readLimited(bytes.NewReader(body), DefaultMaxBody, -1)
		require.NoError(t, err)
		assert.Equal(t, n, len(b))
		assert.LessOrEqual(t, cap(b), max(2*n, 512), "undeclared %d", n)
		assert.LessOrEqual(t, cap(b), DefaultMaxBody+1, "undeclared %d", n)
	}

	// A body longer than it declared is still read up to the cap plus one.
	b, err = readLimited(bytes.NewReader(make([]byte, 5000)), 1000, 10)
	require.NoError(t, err)
	assert.Equal(t, 1001, len(b))
	b, err = readLimited(bytes.NewReader(make([]byte, 5000)), -1, 10)
	require.NoError(t, err)
	assert.Equal(t, 5000, len(b))

	// Uncapped, the largest declarable length neither overflows nor
	// reserves more.
	for _, limit := range []int64{-1, math.MaxInt64} {
		b, err = readLimited(bytes.NewReader(make([]byte, 10)), limit, math.MaxInt64)
		require.NoError(t, err)
		assert.Equal(t, 10, len(b))
		assert.LessOrEqual(t, cap(b), initialBuffer+1)
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
		r.ContentLength = math.MaxInt64
		_, err = RequestHasher{MaxBody: limit, Body: JSON}.Hash(r)
		require.NoError(t, err)
	}
}

// TestRequestLyingContentLengthAllocates: 100 requests declaring the
// default cap and sending one byte allocate a few MiB in all (they
// allocated 101 MiB). The bound is loose for the allocations the rest of
// the process may make meanwhile; the old code exceeds it fivefold.
func TestRequestLyingContentLengthAllocates(t *testing.T) {
	const requests = 100
	reqs := make([]*http.Request, requests)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodPost, "/", nil)
		reqs[i].Body, reqs[i].ContentLength = &trickle{n: 1, err: io.ErrUnexpectedEOF}, DefaultMaxBody
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, r := range reqs {
		_, err := RequestHasher{}.Hash(r)
		require.ErrorIs(t, err, ErrBodyRead)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d requests allocated %d KiB", requests, allocated>>10)
	assert.Less(t, allocated, uint64(20<<20))
}

// TestBodyReadError: a failed read is a *BodyReadError, errors.Is
// ErrBodyRead, that unwraps to the cause and is not ErrBodyTooLarge; the
// body still yields what was read, then the original body's error.
func TestBodyReadError(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Body, r.ContentLength = &trickle{n: 3, err: io.ErrUnexpectedEOF}, 10
	_, err := RequestHasher{Body: JSON}.Hash(r)
	var bre *BodyReadError
	require.ErrorAs(t, err, &bre)
	assert.ErrorIs(t, err, ErrBodyRead)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.NotErrorIs(t, err, ErrBodyTooLarge)
	assert.NotErrorIs(t, err, ErrInvalidJSON)
	assert.Equal(t, "hashers: reading request body: unexpected EOF", err.Error())
	got, err := io.ReadAll(r.Body)
	assert.Equal(t, "xxx", string(got))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	// A limit set by the server is both.
	rec := httptest.NewRecorder()
	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("a", 50)))
	r.Body = http.MaxBytesReader(rec, r.Body, 10)
	_, err = RequestHasher{}.Hash(r)
	var mbe *http.MaxBytesError
	assert.ErrorAs(t, err, &mbe)
	assert.ErrorIs(t, err, ErrBodyRead)

	assert.Equal(t, ErrBodyRead.Error(), (&BodyReadError{}).Error(), "no panic without a cause")
	assert.True(t, errors.Is(&BodyReadError{}, ErrBodyRead))
}
