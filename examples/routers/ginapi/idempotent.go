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
func Idempotent(mw *oncehttp.Middleware) gin.HandlerFunc {
	return func(c *gin.Context) {
		outer := c.Writer
		// Restored on the way out, a panic's too, so that gin.Recovery
		// and the engine answer on the real writer, not on the recorder
		// of a response mw has dropped.
		defer func() { c.Writer = outer }()
		ran := false
		mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ran = true
			c.Request = r
			rw := &recordedWriter{ResponseWriter: outer, w: w, status: http.StatusOK, size: -1}
			c.Writer = rw
			c.Next()
			rw.WriteHeaderNow() // a handler that set a status and wrote no body
		})).ServeHTTP(outer, c.Request)
		if !ran {
			c.Abort()
		}
	}
}

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
