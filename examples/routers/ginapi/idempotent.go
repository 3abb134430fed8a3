package main

import (
	"bufio"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/stagedoor/once/oncehttp"
)

// Idempotent is mw as gin middleware, for a route or a group: the handlers
// after it run inside mw, so that a retry with the same Idempotency-Key
// gets their first answer replayed, and a duplicate answered by mw (replay,
// 409, 422, 400, 401) stops the chain (c.Abort) without running them.
//
// gin.WrapH(mw.Handler(h)) is enough for a plain http.Handler h; gin has no
// wrapper for net/http middleware in front of gin handlers, hence this one.
// Those handlers keep gin's API: c.Param, c.JSON, c.AbortWithStatusJSON,
// and oncehttp.Key(c.Request.Context()). c.Writer is, while they run, a
// gin.ResponseWriter over the response mw records (with gin's semantics:
// the last status set before the body is written wins), and c.Request is
// the request mw passes on, whose context carries the key.
//
// Errors: a handler that only records an error (c.Error, or c.Status
// then c.Error) and writes nothing is answered here, inside mw, with
// {"error": "<status text>"}: its status if it set one of 400 or more,
// else 500. So that failure is what mw stores and replays, not an empty
// 200 telling a retry the request succeeded. A middleware that renders
// c.Errors must come after Idempotent (on the group or route, after it),
// so that its answer is the one recorded: one registered before it runs
// after mw has sent and stored the answer, and its writes are dropped
// here (they would have been appended to a body already sent, the client
// getting other bytes than every retry).
func Idempotent(mw *oncehttp.Middleware) gin.HandlerFunc {
	return func(c *gin.Context) {
		outer := c.Writer
		answered := false
		// Restored on the way out, a panic's too, so that gin.Recovery
		// and the engine answer on the real writer, not on the recorder
		// of a response mw has dropped. Once mw has answered, the
		// middleware before Idempotent get the real writer behind one
		// that drops what they write after it.
		defer func() {
			c.Writer = outer
			if answered {
				c.Writer = answeredWriter{outer}
			}
		}()
		ran := false
		mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ran = true
			c.Request = r
			rw := &recordedWriter{ResponseWriter: outer, w: w, status: http.StatusOK, size: -1}
			c.Writer = rw
			c.Next()
			if !rw.Written() && len(c.Errors) > 0 {
				status := http.StatusInternalServerError
				if rw.status >= http.StatusBadRequest {
					status = rw.status
				}
				c.JSON(status, gin.H{"error": http.StatusText(status)})
			}
			rw.WriteHeaderNow() // a handler that set a status and wrote no body
		})).ServeHTTP(outer, c.Request)
		answered = true
		if !ran {
			c.Abort()
		}
	}
}

// answeredWriter is the writer of the middleware before Idempotent once
// mw has answered: the real one, whose status and size they may read,
// but whose body and header are final, so that the client gets what mw
// stored.
type answeredWriter struct{ gin.ResponseWriter }

func (answeredWriter) WriteHeader(int)                   {}
func (answeredWriter) WriteHeaderNow()                   {}
func (answeredWriter) Write(p []byte) (int, error)       { return len(p), nil }
func (answeredWriter) WriteString(s string) (int, error) { return len(s), nil }
func (answeredWriter) Header() http.Header               { return http.Header{} }

// recordedWriter is a gin.ResponseWriter over w, the writer oncehttp gives
// the handler, written the way gin's own writer is: the status is kept
// until the first byte of the body (or WriteHeaderNow). The embedded
// ResponseWriter is the real one, for CloseNotify alone; every other
// method is this type's own.
type recordedWriter struct {
	gin.ResponseWriter
	w      http.ResponseWriter
	status int
	size   int // -1 until the header is written
}

var _ gin.ResponseWriter = (*recordedWriter)(nil)

func (rw *recordedWriter) Header() http.Header { return rw.w.Header() }

func (rw *recordedWriter) WriteHeader(code int) {
	if code > 0 && !rw.Written() {
		rw.status = code
	}
}

func (rw *recordedWriter) WriteHeaderNow() {
	if !rw.Written() {
		rw.size = 0
		rw.w.WriteHeader(rw.status)
	}
}

func (rw *recordedWriter) Write(p []byte) (int, error) {
	rw.WriteHeaderNow()
	n, err := rw.w.Write(p)
	rw.size += n
	return n, err
}

func (rw *recordedWriter) WriteString(s string) (int, error) { return rw.Write([]byte(s)) }

func (rw *recordedWriter) Status() int   { return rw.status }
func (rw *recordedWriter) Size() int     { return rw.size }
func (rw *recordedWriter) Written() bool { return rw.size != -1 }

// Flush writes the header; the body stays buffered until the handler
// returns, unless it outgrew Config.MaxStoredBody (oncehttp streams it then).
func (rw *recordedWriter) Flush() {
	rw.WriteHeaderNow()
	_ = http.NewResponseController(rw.w).Flush()
}

// Hijack is refused by oncehttp: a hijacked connection has no response to
// store.
func (rw *recordedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(rw.w).Hijack()
}

// Pusher is nil: a pushed response would bypass the recording.
func (rw *recordedWriter) Pusher() http.Pusher { return nil }

// Unwrap is oncehttp's writer, for http.ResponseController (deadlines).
func (rw *recordedWriter) Unwrap() http.ResponseWriter { return rw.w }
