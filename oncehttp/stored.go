package oncehttp

import (
	"maps"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// storedFormat is the version of storedResponse's encoding (1 is unused);
// bump it if the fields change meaning, so that records written by an
// older release are recognised.
const storedFormat = 2

// storedResponse is the outcome stored for a key: what a replay sends.
// responseCodec encodes it.
type storedResponse struct {
	Format int
	Status int
	Header http.Header
	// Trailer holds the allow-listed trailers, sent after the body.
	Trailer http.Header
	Body    []byte
	// TooLarge records that the body exceeded MaxStoredBody: the status
	// and headers are stored without the body, and a replay points to the
	// result's URI (see replayTooLarge).
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

// representationHeaders are stored whatever the allow-list says: the
// stored body's bytes are what they describe (a gzip body is only the
// response with its Content-Encoding, a 206 body only with its
// Content-Range), and Vary says which request headers chose them.
var representationHeaders = []string{"Content-Encoding", "Content-Range", "Vary"}

// storeList returns the canonical, de-duplicated allow-list with the
// never-stored headers removed and representationHeaders added.
func storeList(names []string) []string {
	if names == nil {
		names = DefaultStoreHeaders
	}
	out := make([]string, 0, len(names)+len(representationHeaders))
	for _, n := range slices.Concat(names, representationHeaders) {
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
// the same name), "Idempotent-Replayed: true", its body, byte for byte, and
// its stored trailers.
func (s *storedResponse) replay(w http.ResponseWriter, method string) {
	h := w.Header()
	for name, v := range s.Header {
		h[name] = v
	}
	h.Set(ReplayedHeader, "true")
	if len(s.Trailer) > 0 {
		names := slices.Sorted(maps.Keys(s.Trailer))
		h["Trailer"] = []string{strings.Join(names, ", ")}
	} else {
		setContentLength(h, s.Status, method, len(s.Body))
	}
	w.WriteHeader(s.Status)
	if len(s.Body) > 0 && bodyAllowed(s.Status) && method != http.MethodHead {
		_, _ = w.Write(s.Body)
	}
	for name, v := range s.Trailer {
		h[name] = v
	}
}

// resultLocation returns the URI a too-large response named for its
// result: Content-Location (the body is a representation of it), else
// Location (the created resource).
func (s *storedResponse) resultLocation() string {
	if v := s.Header.Get("Content-Location"); v != "" {
		return v
	}
	return s.Header.Get("Location")
}

// sentHeader returns a copy of h as net/http sends it as the response
// header: without the http.TrailerPrefix fields, which are trailers.
func sentHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for name, v := range h {
		if !strings.HasPrefix(name, http.TrailerPrefix) {
			out[name] = slices.Clone(v)
		}
	}
	return out
}

// resetHeader makes h hold exactly the fields of snapshot.
func resetHeader(h, snapshot http.Header) {
	clear(h)
	for name, v := range snapshot {
		h[name] = v
	}
}

// trailerValues returns the trailers a handler set, as net/http collects
// them when the handler returns: the fields that sent (the header at
// WriteHeader time) declared in "Trailer", with their values in live (the
// header map now), and the fields of live named with http.TrailerPrefix.
// It returns nil when there is none.
func trailerValues(sent, live http.Header) http.Header {
	var out http.Header
	add := func(name string, v []string) {
		if len(v) == 0 || name == "" {
			return
		}
		if out == nil {
			out = make(http.Header)
		}
		out[name] = slices.Clone(v)
	}
	for _, decl := range sent["Trailer"] {
		for name := range strings.SplitSeq(decl, ",") {
			name = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))
			add(name, live[name])
		}
	}
	for name, v := range live {
		if after, ok := strings.CutPrefix(name, http.TrailerPrefix); ok {
			add(textproto.CanonicalMIMEHeaderKey(after), v)
		}
	}
	return out
}

// setTrailers puts trailers into h after WriteHeader, so that net/http
// sends them after the body: a declared one under its name, any other
// under http.TrailerPrefix.
func setTrailers(h, trailers http.Header) {
	if len(trailers) == 0 {
		return
	}
	declared := map[string]bool{}
	for _, decl := range h["Trailer"] {
		for name := range strings.SplitSeq(decl, ",") {
			declared[textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	for name, v := range trailers {
		if declared[name] {
			h[name] = v
		} else {
			h[http.TrailerPrefix+name] = v
		}
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

// encodedSize is the length of s in responseCodec's form.
func (s *storedResponse) encodedSize() int {
	return 1 + uvarintLen(uint64(s.Status)) + 1 + fieldsLen(s.Header) + fieldsLen(s.Trailer) + len(s.Body)
}

func fieldsLen(h http.Header) int {
	n := uvarintLen(uint64(len(h)))
	for name, vals := range h {
		n += uvarintLen(uint64(len(name))) + len(name) + uvarintLen(uint64(len(vals)))
		for _, v := range vals {
			n += uvarintLen(uint64(len(v))) + len(v)
		}
	}
	return n
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// fit makes s at most limit bytes in responseCodec's form, so that the
// Keeper's outcome cap never refuses it: a response whose stored headers
// and trailers outgrow the room left beside MaxStoredBody is stored as a
// too-large one (without its body: a replay is 303 See Other to its
// Content-Location or Location); if even that is too large, with only
// that header, and then with none (a replay is 500 response-unavailable).
func (s *storedResponse) fit(limit int) {
	if s.encodedSize() <= limit {
		return
	}
	s.Body, s.TooLarge = nil, true
	if s.encodedSize() <= limit {
		return
	}
	s.Trailer = nil
	var kept http.Header
	for _, name := range []string{"Content-Location", "Location"} {
		if v := s.Header.Get(name); v != "" {
			kept = http.Header{name: {v}}
			break
		}
	}
	s.Header = kept
	if s.encodedSize() > limit {
		s.Header = nil
	}
}
