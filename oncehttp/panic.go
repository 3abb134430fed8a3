package oncehttp

import (
	"log"
	"net/http"
	"runtime/debug"
	"strings"
)

// handlerPanic is a panic recovered from the guarded handler.
type handlerPanic struct {
	value any
	stack []byte
}

// runHandler serves r with next and returns the panic it recovered, if
// any. A panic must not leave the key free: net/http would abort the
// connection, and a client that retries the aborted request with its key
// (oncehttp's Transport, net/http's own Transport on a reused connection)
// would run a handler that may already have acted.
func runHandler(next http.Handler, w http.ResponseWriter, r *http.Request) (p *handlerPanic) {
	defer func() {
		if v := recover(); v != nil { // panic(nil) recovers a *runtime.PanicNilError
			p = &handlerPanic{value: v, stack: debug.Stack()}
		}
	}()
	next.ServeHTTP(w, r)
	return nil
}

// answerPanic ends a request whose handler panicked, after the key was
// settled as a 500 (held by default). It logs the panic as net/http does
// (to the Server's ErrorLog, else the log package) and answers 500
// request-failed; nothing the handler buffered is sent. A panic with
// http.ErrAbortHandler, or one after the response started streaming, is
// not answered: the middleware panics with http.ErrAbortHandler, so that
// net/http aborts the connection (as it does for the handler's own
// ErrAbortHandler) and the client sees a failed response rather than a
// complete one.
func (m *Middleware) answerPanic(w http.ResponseWriter, r *http.Request, rec *recorder, p *handlerPanic) {
	if p.value != http.ErrAbortHandler {
		logf := log.Printf
		if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ErrorLog != nil {
			logf = srv.ErrorLog.Printf
		}
		logf("oncehttp: panic serving %s %s: %v\n%s", r.RemoteAddr, r.URL.Path, p.value, p.stack)
	}
	if p.value == http.ErrAbortHandler || rec.streaming {
		panic(http.ErrAbortHandler)
	}
	dropUnsent(w.Header())
	m.problems.write(w, probRequestFailed, 0)
}

// dropUnsent removes from h the headers of the handler's unsent response
// (a panic's, a transaction's that did not commit) that do not describe
// the problem answered instead: its representation, its result and its
// cookies. Others (set by outer middleware, say) stay.
func dropUnsent(h http.Header) {
	for name := range h {
		if unsentDropped[name] || strings.HasPrefix(name, http.TrailerPrefix) {
			delete(h, name)
		}
	}
}

var unsentDropped = map[string]bool{
	"Content-Encoding": true, "Content-Range": true, "Content-Language": true,
	"Content-Location": true, "Content-Disposition": true, "Content-Length": true,
	"Etag": true, "Last-Modified": true, "Location": true, "Link": true,
	"Set-Cookie": true, "Trailer": true, "Transfer-Encoding": true, "Vary": true,
	"Retry-After": true, "Expires": true,
}
