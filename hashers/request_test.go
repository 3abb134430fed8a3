package hashers

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stagedoor/once"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hiddenLength hides a reader's concrete type so that http.NewRequest
// cannot learn the length: ContentLength stays unknown, as with a chunked
// upload.
type hiddenLength struct{ io.Reader }

func newReq(t *testing.T, method, target, body string) *http.Request {
	t.Helper()
	return httptest.NewRequest(method, target, strings.NewReader(body))
}

func mustHash(t *testing.T, h RequestHasher, r *http.Request) []byte {
	t.Helper()
	fp, err := h.Hash(r)
	require.NoError(t, err)
	require.Len(t, fp, Size)
	return fp
}

func TestRequestRestoresBody(t *testing.T) {
	body := `{"hold_ids": [88211, 88212], "payment_method": "pm_4Yc"}` + "\x00\xff binary"
	for name, r := range map[string]*http.Request{
		"known length":   newReq(t, http.MethodPost, "/orders", body),
		"unknown length": httptest.NewRequest(http.MethodPost, "/orders", hiddenLength{strings.NewReader(body)}),
	} {
		t.Run(name, func(t *testing.T) {
			fp1 := mustHash(t, RequestHasher{}, r)

			got, err := io.ReadAll(r.Body)
			require.NoError(t, err)
			assert.Equal(t, body, string(got), "handler reads the body byte for byte")

			require.NotNil(t, r.GetBody)
			for range 2 {
				rc, err := r.GetBody()
				require.NoError(t, err)
				got, err := io.ReadAll(rc)
				require.NoError(t, err)
				assert.Equal(t, body, string(got), "GetBody")
			}

			// Hashing again (a second middleware) sees the same bytes.
			r.Body, _ = r.GetBody()
			assert.Equal(t, fp1, mustHash(t, RequestHasher{}, r))
		})
	}
}

func TestRequestThroughServer(t *testing.T) {
	body := strings.Repeat("x", 100_000)
	var got string
	var fp []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		fp, err = Request(r, 0)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	}))
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/orders", "text/plain", hiddenLength{strings.NewReader(body)})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, body, got)
	assert.Equal(t, mustHash(t, RequestHasher{}, newReq(t, http.MethodPost, "/orders", body)), fp)
}

func TestRequestDistinguishes(t *testing.T) {
	base := func() *http.Request { return newReq(t, http.MethodPost, "/orders?x=1", "body") }
	h := RequestHasher{}
	want := mustHash(t, h, base())
	assert.Equal(t, want, mustHash(t, h, base()), "deterministic")
	assert.NotEqual(t, want, mustHash(t, h, newReq(t, http.MethodPost, "/orders?x=2", "body")), "query included by default")

	differ := map[string]*http.Request{
		"method":       newReq(t, http.MethodPut, "/orders?x=1", "body"),
		"method case":  newReq(t, "post", "/orders?x=1", "body"),
		"path":         newReq(t, http.MethodPost, "/order?x=1", "body"),
		"slash":        newReq(t, http.MethodPost, "/orders/?x=1", "body"),
		"escaped path": newReq(t, http.MethodPost, "/ord%2Fers?x=1", "body"),
		"body":         newReq(t, http.MethodPost, "/orders?x=1", "bodz"),
		"empty body":   newReq(t, http.MethodPost, "/orders?x=1", ""),
		// The boundary between method and path must not shift.
		"boundary": func() *http.Request {
			r := newReq(t, http.MethodPost, "/orders?x=1", "body")
			r.Method, r.URL.Path = "POST/", "orders"
			return r
		}(),
	}
	for name, r := range differ {
		assert.NotEqual(t, want, mustHash(t, h, r), name)
	}

	q := RequestHasher{Query: QueryRaw}
	withQ := mustHash(t, q, base())
	assert.NotEqual(t, want, withQ, "QueryRaw and QueryCanonical never share digests")
	assert.NotEqual(t, withQ, mustHash(t, q, newReq(t, http.MethodPost, "/orders?x=2", "body")))
	assert.NotEqual(t, withQ, mustHash(t, q, newReq(t, http.MethodPost, "/orders?", "body")))
	ignore := RequestHasher{Query: QueryIgnore}
	assert.Equal(t, mustHash(t, ignore, base()), mustHash(t, ignore, newReq(t, http.MethodPost, "/orders?x=2", "body")), "QueryIgnore")
	for _, a := range []RequestHasher{h, q} {
		assert.NotEqual(t, mustHash(t, a, newReq(t, http.MethodPost, "/orders", "body")),
			mustHash(t, ignore, newReq(t, http.MethodPost, "/orders", "body")),
			"configurations never share digests")
	}
}

// TestRequestTargetCanonical: queries and paths that every server reads
// alike share a digest; those that may mean something else do not.
func TestRequestTargetCanonical(t *testing.T) {
	h := RequestHasher{}
	digest := func(target string) string {
		return hexString(mustHash(t, h, newReq(t, http.MethodPost, target, "body")))
	}
	same := [][]string{
		{"/orders?a=1&b=2", "/orders?b=2&a=1", "/orders?a=%31&b=2", "/orders?b=2&&a=1&", "/orders?a=1&b=%32"},
		{"/orders?q=a+b", "/orders?q=a%20b"},
		{"/orders?flag", "/orders?flag="},
		{"/orders", "/orders?", "/orders?&"},
		{"/~user/x", "/%7euser/x", "/%7Euser/x"},
		{"/a%2fb", "/a%2Fb"},
	}
	for _, group := range same {
		for _, target := range group[1:] {
			assert.Equal(t, digest(group[0]), digest(target), "%s ~ %s", group[0], target)
		}
	}
	differ := [][2]string{
		{"/orders?a=1&a=2", "/orders?a=2&a=1"},
		{"/orders?status=201", "/orders?status=202"},
		{"/orders?a=1", "/orders?A=1"},
		{"/orders?a=1&b=2", "/orders?a=1%26b%3D2"},
		{"/orders?a=b=c", "/orders?a=b&c"},
		{"/a%2Fb", "/a/b"},
		{"/orders?x=%zz", "/orders?x=%25zz"}, // malformed: hashed raw, under another tag
		{"/orders?a;b", "/orders?a&b"},
	}
	for _, d := range differ {
		assert.NotEqual(t, digest(d[0]), digest(d[1]), "%s vs %s", d[0], d[1])
	}
}

func TestRequestBodyTooLarge(t *testing.T) {
	body := strings.Repeat("0123456789", 10) // 100 bytes
	cases := map[string]*http.Request{
		"declared length": newReq(t, http.MethodPost, "/", body),
		"unknown length":  httptest.NewRequest(http.MethodPost, "/", hiddenLength{strings.NewReader(body)}),
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			var closed bool
			r.Body = closeSpy{r.Body, &closed}
			_, err := RequestHasher{MaxBody: 99}.Hash(r)
			require.ErrorIs(t, err, ErrBodyTooLarge)
			var tooLarge *BodyTooLargeError
			require.ErrorAs(t, err, &tooLarge)
			assert.EqualValues(t, 99, tooLarge.Limit)

			got, err := io.ReadAll(r.Body)
			require.NoError(t, err)
			assert.Equal(t, body, string(got), "nothing of the body is lost")
			require.NoError(t, r.Body.Close())
			assert.True(t, closed, "Close reaches the original body")
		})
	}

	// Exactly at the cap is fine.
	r := httptest.NewRequest(http.MethodPost, "/", hiddenLength{strings.NewReader(body)})
	_, err := RequestHasher{MaxBody: 100}.Hash(r)
	require.NoError(t, err)
}

func TestRequestReadsAtMostCapPlusOne(t *testing.T) {
	src := &countingReader{r: strings.NewReader(strings.Repeat("a", 10_000))}
	r := httptest.NewRequest(http.MethodPost, "/", hiddenLength{src})
	_, err := RequestHasher{MaxBody: 1000}.Hash(r)
	require.ErrorIs(t, err, ErrBodyTooLarge)
	assert.EqualValues(t, 1001, src.n)
}

func TestRequestDefaultCap(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", hiddenLength{bytes.NewReader(make([]byte, DefaultMaxBody+1))})
	_, err := RequestHasher{}.Hash(r)
	var tooLarge *BodyTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.EqualValues(t, DefaultMaxBody, tooLarge.Limit)

	r = httptest.NewRequest(http.MethodPost, "/", hiddenLength{bytes.NewReader(make([]byte, DefaultMaxBody+1))})
	_, err = RequestHasher{MaxBody: -1}.Hash(r)
	require.NoError(t, err, "negative MaxBody means no cap")
}

func TestRequestNilAndNoBody(t *testing.T) {
	r1 := httptest.NewRequest(http.MethodDelete, "/orders/1", nil)
	r1.Body = nil
	r2 := httptest.NewRequest(http.MethodDelete, "/orders/1", nil)
	r2.Body = http.NoBody
	r3 := newReq(t, http.MethodDelete, "/orders/1", "")

	fp1 := mustHash(t, RequestHasher{}, r1)
	assert.Nil(t, r1.Body, "nil body left alone")
	assert.Equal(t, fp1, mustHash(t, RequestHasher{}, r2))
	assert.Equal(t, http.NoBody, r2.Body, "NoBody left alone")
	assert.Equal(t, fp1, mustHash(t, RequestHasher{}, r3), "empty body hashes like no body")

	called := false
	h := RequestHasher{Body: func([]byte) (once.Fingerprint, error) { called = true; return nil, errors.New("boom") }}
	_, err := h.Hash(httptest.NewRequest(http.MethodDelete, "/orders/1", nil))
	require.NoError(t, err)
	assert.False(t, called, "Body is not called for an empty body")
}

func TestRequestJSONBody(t *testing.T) {
	h := RequestHasher{Body: JSON}
	a := newReq(t, http.MethodPost, "/orders", `{"amount": 1.50, "currency": "EUR"}`)
	b := newReq(t, http.MethodPost, "/orders", "{\"currency\":\"EUR\",\n \"amount\":15e-1}")
	c := newReq(t, http.MethodPost, "/orders", `{"amount": 1.51, "currency": "EUR"}`)
	assert.Equal(t, mustHash(t, h, a), mustHash(t, h, b))
	assert.NotEqual(t, mustHash(t, h, a), mustHash(t, h, c))

	raw := mustHash(t, RequestHasher{}, newReq(t, http.MethodPost, "/orders", `{"amount": 1.50, "currency": "EUR"}`))
	assert.NotEqual(t, raw, mustHash(t, h, newReq(t, http.MethodPost, "/orders", `{"amount": 1.50, "currency": "EUR"}`)))

	bad := newReq(t, http.MethodPost, "/orders", `{"amount": 1, "amount": 2}`)
	_, err := h.Hash(bad)
	require.ErrorIs(t, err, ErrInvalidJSON)
	got, _ := io.ReadAll(bad.Body)
	assert.Equal(t, `{"amount": 1, "amount": 2}`, string(got), "body restored after a Body error")

	fields := RequestHasher{Body: func(b []byte) (once.Fingerprint, error) { return Fields(b, "amount") }}
	d := newReq(t, http.MethodPost, "/orders", `{"amount": 1.5, "trace": "x"}`)
	e := newReq(t, http.MethodPost, "/orders", `{"amount": 1.5, "trace": "y"}`)
	assert.Equal(t, mustHash(t, fields, d), mustHash(t, fields, e))
}

func TestRequestReadError(t *testing.T) {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("a", 50)))
	r.ContentLength = -1
	r.Body = http.MaxBytesReader(rec, r.Body, 10)
	_, err := RequestHasher{}.Hash(r)
	var mbe *http.MaxBytesError
	require.ErrorAs(t, err, &mbe, "the read error is wrapped")
	assert.NotErrorIs(t, err, ErrBodyTooLarge)

	got, err := io.ReadAll(r.Body)
	assert.Equal(t, strings.Repeat("a", 10), string(got), "bytes read, then the original error")
	require.ErrorAs(t, err, &mbe)
}

func TestRequestNoURL(t *testing.T) {
	_, err := RequestHasher{}.Hash(&http.Request{Method: http.MethodGet})
	require.Error(t, err)
}

type closeSpy struct {
	io.ReadCloser
	closed *bool
}

func (c closeSpy) Close() error { *c.closed = true; return c.ReadCloser.Close() }

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestRequestNilIsAnError(t *testing.T) {
	_, err := RequestHasher{}.Hash(nil)
	assert.ErrorIs(t, err, ErrInvalidRequest)
	_, err = RequestHasher{}.Hash(&http.Request{Method: http.MethodPost})
	assert.ErrorIs(t, err, ErrInvalidRequest)
}
