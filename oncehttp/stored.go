package oncehttp

import (
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// storedFormat is the version of storedResponse's encoding; bump it if the
// fields change meaning, so that records written by an older release are
// recognised.
const storedFormat = 1

// storedResponse is the outcome stored for a key: what a replay sends.
// responseCodec encodes it.
type storedResponse struct {
	Format int
	Status int
	Header http.Header
	Body   []byte
	// TooLarge records that the body exceeded MaxStoredBody: only the fact
	// is stored, and a replay answers response-unavailable.
	TooLarge bool
}

// neverStored are headers that are not stored even when allow-listed:
// cookies and hop-by-hop fields (RFC 9110 §7.6.1). Proxy-* is matched by
// prefix, and fields named by the response's Connection header per
// response.
var neverStored = map[string]bool{
	"Set-Cookie":        true,
	"Set-Cookie2":       true,
	"Connection":        true,
	"Keep-Alive":        true,
	"Transfer-Encoding": true,
	"Upgrade":           true,
	"Te":                true,
	"Trailer":           true,
	ReplayedHeader:      true,
}

func storable(canonical string) bool {
	return !neverStored[canonical] && !strings.HasPrefix(canonical, "Proxy-")
}

// storeList returns the canonical, de-duplicated allow-list with the
// never-stored headers removed.
func storeList(names []string) []string {
	if names == nil {
		names = DefaultStoreHeaders
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		c := textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(n))
		if c != "" && storable(c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// storedHeader copies the allow-listed fields of h, skipping those that
// h's Connection header declares hop-by-hop. It returns nil when none is
// present.
func storedHeader(h http.Header, allow []string) http.Header {
	var out http.Header
	for _, name := range allow {
		v, ok := h[name]
		if !ok || connectionNames(h, name) {
			continue
		}
		if out == nil {
			out = make(http.Header, len(allow))
		}
		out[name] = slices.Clone(v)
	}
	return out
}

// connectionNames reports whether the Connection header of h names field.
func connectionNames(h http.Header, field string) bool {
	for _, v := range h["Connection"] {
		for opt := range strings.SplitSeq(v, ",") {
			if textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(opt)) == field {
				return true
			}
		}
	}
	return false
}

// bodyAllowed reports whether a response with status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// replay writes s to w: its status, its stored headers (replacing any of
// the same name), "Idempotent-Replayed: true" and its body, byte for byte.
func (s *storedResponse) replay(w http.ResponseWriter, method string) {
	h := w.Header()
	for name, v := range s.Header {
		h[name] = v
	}
	h.Set(ReplayedHeader, "true")
	setContentLength(h, s.Status, method, len(s.Body))
	w.WriteHeader(s.Status)
	if len(s.Body) > 0 && bodyAllowed(s.Status) && method != http.MethodHead {
		_, _ = w.Write(s.Body)
	}
}

// setContentLength declares the length of a fully buffered body, unless the
// handler declared one or the response has no body.
func setContentLength(h http.Header, status int, method string, n int) {
	if !bodyAllowed(status) || method == http.MethodHead {
		return
	}
	if _, ok := h["Content-Length"]; ok {
		return
	}
	if _, ok := h["Transfer-Encoding"]; ok {
		return
	}
	h["Content-Length"] = []string{strconv.Itoa(n)}
}
