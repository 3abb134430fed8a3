package oncehttp

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
)

// recorder is the ResponseWriter the guarded handler writes to. It shares
// the real writer's header map, forwards 1xx informational responses at
// once, and buffers the final status and body so that they can be stored
// before the client sees them. When the body outgrows the storage cap it
// commits what it has and streams the rest.
//
// Headers are what net/http makes of them: the header map as it was at
// WriteHeader (or the first Write) is the response's header, for the first
// client and for the stored copy alike; a header set later is dropped,
// unless it is a trailer (declared in "Trailer" before WriteHeader, or
// named with http.TrailerPrefix), which is sent after the body.
type recorder struct {
	rw     http.ResponseWriter
	method string
	allow  []string // header allow-list
	limit  int      // MaxStoredBody

	status    int         // final status; 0 until written
	sent      http.Header // the header map at WriteHeader time
	stored    http.Header // allow-listed headers at WriteHeader time
	trailers  http.Header // trailers at the end of the handler
	body      []byte
	streaming bool // the response went to rw; body is no longer kept
}

var (
	_ http.Flusher  = (*recorder)(nil)
	_ http.Hijacker = (*recorder)(nil)
)

// Header returns the real writer's header map: headers set by outer
// middleware are visible and kept, as without this middleware.
func (r *recorder) Header() http.Header { return r.rw.Header() }

// WriteHeader records the final status, or forwards a 1xx at once. A
// second final status is ignored, as net/http ignores it.
func (r *recorder) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if r.status != 0 {
		return
	}
	if code < 200 {
		r.rw.WriteHeader(code)
		return
	}
	r.status = code
	r.sent = sentHeader(r.rw.Header())
	r.stored = storedHeader(r.sent, r.allow)
}

// Write buffers p, or sends it once the response streams. It returns
// http.ErrBodyNotAllowed for statuses without a body, like net/http.
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(r.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if r.streaming {
		return r.rw.Write(p)
	}
	if len(r.body)+len(p) <= r.limit {
		r.body = append(r.body, p...)
		return len(p), nil
	}
	// Over the storage cap: this response will not be stored; stop
	// buffering it and send it as it comes.
	r.streaming = true
	resetHeader(r.rw.Header(), r.sent)
	r.rw.WriteHeader(r.status)
	if len(r.body) > 0 {
		if _, err := r.rw.Write(r.body); err != nil {
			return 0, err
		}
	}
	r.body = nil
	return r.rw.Write(p)
}

// Flush flushes the real writer once the response streams; while the
// response is buffered there is nothing the client may see yet.
func (r *recorder) Flush() {
	if r.streaming {
		_ = http.NewResponseController(r.rw).Flush()
	}
}

// Hijack refuses: a hijacked connection has no response to store or replay.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, fmt.Errorf("oncehttp: hijacking a guarded request: %w", http.ErrNotSupported)
}

// Unwrap returns the real writer, for http.ResponseController (deadlines,
// full duplex).
func (r *recorder) Unwrap() http.ResponseWriter { return r.rw }

// finish settles the status of a handler that wrote nothing (200, as
// net/http does) and collects the trailers the handler set.
func (r *recorder) finish() {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	r.trailers = trailerValues(r.sent, r.rw.Header())
}

// commit sends the buffered response to the real writer, as the handler
// wrote it (Set-Cookie included), unless it already streamed: the header
// map as it was at WriteHeader, the body, then the trailers.
func (r *recorder) commit() {
	if r.streaming {
		return
	}
	h := r.rw.Header()
	resetHeader(h, r.sent)
	if r.trailers == nil {
		setContentLength(h, r.status, r.method, len(r.body))
	}
	r.rw.WriteHeader(r.status)
	if len(r.body) > 0 && r.method != http.MethodHead {
		_, _ = r.rw.Write(r.body)
	}
	setTrailers(h, r.trailers)
}

// response returns what is stored for the recorded response: its status,
// its allow-listed headers and trailers, and its body unless the body
// outgrew the cap.
func (r *recorder) response() storedResponse {
	s := storedResponse{
		Format: storedFormat, Status: r.status, Header: r.stored,
		Trailer: storedHeader(r.trailers, r.allow),
	}
	if r.streaming {
		s.TooLarge = true
		return s
	}
	s.Body = r.body
	return s
}
