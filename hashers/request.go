package hashers

import (
	"fmt"
	"net/http"

	"github.com/stagedoor/once"
)

// DefaultMaxBody is the body cap of a [RequestHasher] whose MaxBody is zero:
// 1 MiB.
const DefaultMaxBody = 1 << 20

// requestTag is the domain tag of request digests; bump the version if the
// encoding below ever changes.
const requestTag = "once/hashers.Request/v2"

// Flags recorded in every request digest, so that hashers configured
// differently never produce the same digest for different requests.
const (
	flagQueryRaw       byte = 1 << iota // the raw query is included
	flagBody                            // the body part is the output of Body, not raw bytes
	flagQueryCanonical                  // the canonical query pairs are included
)

// QueryMode says how a RequestHasher includes the query string.
type QueryMode uint8

const (
	// QueryCanonical includes the query as the list of its decoded
	// name=value pairs, sorted by name, the values of one name kept in
	// their order: "a=1&b=2", "b=2&a=1", "a=%31&b=2" and "b=2&&a=1" are
	// the same query, as url.ParseQuery reads them; "a=1&a=2" and
	// "a=2&a=1" are not. A query that url.ParseQuery rejects (a bad
	// escape, a semicolon) is included raw, under a distinct tag. This is
	// the default.
	QueryCanonical QueryMode = iota
	// QueryRaw includes r.URL.RawQuery exactly as sent.
	QueryRaw
	// QueryIgnore leaves the query out: POST /orders?debug=1 and POST
	// /orders with the same body are the same request.
	QueryIgnore
)

// RequestHasher fingerprints an HTTP request by its method, its request
// target (path and query) and its body. The zero value is ready to use: raw
// body, 1 MiB cap, canonical path and query. A RequestHasher is immutable in use and safe for concurrent use
// on different requests.
type RequestHasher struct {
	// MaxBody caps the body size in bytes; a longer body makes Hash fail
	// with a *BodyTooLargeError and nothing is hashed. Defaults to
	// DefaultMaxBody (1 MiB) when zero. A negative value disables the cap,
	// which lets any client make the server buffer any amount of memory.
	MaxBody int64

	// Query says how the query string enters the digest. Defaults to
	// QueryCanonical: a query that changes what the request means (POST
	// /orders?status=202) never gets the answer of another query.
	Query QueryMode

	// Body, if set, turns the body bytes into the part that is hashed, e.g.
	// JSON so that re-serialised JSON bodies match, or a closure over
	// Fields. It must not modify or retain the slice, which is also what
	// the handler will read. Its error is returned by Hash, wrapped (so
	// errors.Is(err, ErrInvalidJSON) works). Body is not called for
	// an empty body, which is hashed as empty whatever Body is, so a
	// bodiless DELETE works with Body set to JSON. Defaults to nil: the raw
	// body bytes are hashed.
	Body func(body []byte) (once.Fingerprint, error)
}

// Request is shorthand for RequestHasher{MaxBody: maxBody}.Hash(r).
func Request(r *http.Request, maxBody int64) (once.Fingerprint, error) {
	return RequestHasher{MaxBody: maxBody}.Hash(r)
}

// Hash returns the SHA-256 fingerprint of r: its method (case-sensitive;
// "" is GET, as net/http reads it), its escaped path (r.URL.EscapedPath(),
// not cleaned, so "/a" and "/a/" differ, but with RFC 3986 §6.2.2
// normalisation: hex digits of percent-escapes upper-cased and escaped
// unreserved characters decoded, so "/%7euser" is "/~user" while
// "/a%2Fb" stays apart from "/a/b"), its query as the Query field says,
// and its body as the Body field says. The host, headers and
// trailers are not included. Requests with equal components give equal
// digests; requests differing in any included component give different
// ones, except where Body maps two bodies to one value (as JSON does for
// reordered keys, by design).
//
// Hash reads the body and puts it back: on success r.Body is replaced by a
// reader over the same bytes, whose Close closes the original body, and
// r.GetBody returns fresh readers over them, so the handler (or a client
// retry) reads exactly what the client sent. r.ContentLength is left
// unchanged. A nil body or http.NoBody is hashed as empty and left alone.
//
// Hash reads at most MaxBody+1 bytes. If the body is longer, or declares a
// Content-Length above MaxBody (then nothing is read), it returns a
// *BodyTooLargeError (errors.Is ErrBodyTooLarge) and r.Body still yields
// the whole body: the bytes already read followed by the unread rest.
// If reading fails (a client disconnect, an http.MaxBytesReader limit), it
// returns a *BodyReadError (errors.Is ErrBodyRead) that unwraps to the read
// error, and r.Body likewise yields the bytes read and then the original
// body's remaining bytes or error. The buffer grows as bytes arrive: a
// declared Content-Length reserves at most 64 KiB before they do. A Body error is
// returned wrapped, with r.Body restored as on success.
//
// Hash mutates r, so it must not run concurrently with other uses of r.
func (h RequestHasher) Hash(r *http.Request) (once.Fingerprint, error) {
	if r == nil || r.URL == nil {
		return nil, ErrInvalidRequest
	}
	body, err := readBody(r, h.limit())
	if err != nil {
		return nil, err
	}

	var flags byte
	var pairs [][2]string
	switch h.Query {
	case QueryRaw:
		flags |= flagQueryRaw
	case QueryIgnore:
	default:
		var ok bool
		if pairs, ok = canonicalQuery(r.URL.RawQuery); ok {
			flags |= flagQueryCanonical
		} else {
			flags |= flagQueryRaw
		}
	}
	part := body
	if h.Body != nil && len(body) > 0 {
		fp, err := h.Body(body)
		if err != nil {
			return nil, fmt.Errorf("hashers: request body: %w", err)
		}
		flags |= flagBody
		part = fp
	}

	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	w := newWriter()
	w.stringPart(requestTag)
	w.bytePart(flags)
	w.stringPart(method)
	w.stringPart(normalPath(r.URL.EscapedPath()))
	switch {
	case flags&flagQueryRaw != 0:
		w.stringPart(r.URL.RawQuery)
	case flags&flagQueryCanonical != 0:
		w.length(len(pairs))
		for _, p := range pairs {
			w.stringPart(p[0])
			w.stringPart(p[1])
		}
	default:
		w.part(nil)
	}
	w.part(part)
	return w.sum(), nil
}

func (h RequestHasher) limit() int64 {
	switch {
	case h.MaxBody == 0:
		return DefaultMaxBody
	case h.MaxBody < 0:
		return -1
	default:
		return h.MaxBody
	}
}
