package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/stagedoor/once/oncehttp"
)

// httpView is a response stored by oncehttp, as get prints it.
type httpView struct {
	Status  int                 `json:"status"`
	Header  map[string][]string `json:"header,omitempty"`
	Trailer map[string][]string `json:"trailer,omitempty"`
	// Body is the body as text when it is valid UTF-8; BodyRaw (base64 in
	// JSON) otherwise.
	Body     *string `json:"body,omitempty"`
	BodyRaw  []byte  `json:"body_raw,omitempty"`
	TooLarge bool    `json:"too_large,omitempty"`
}

func newHTTPView(r oncehttp.StoredResponse) *httpView {
	v := &httpView{Status: r.Status, Header: r.Header, Trailer: r.Trailer, TooLarge: r.TooLarge}
	if utf8.Valid(r.Body) {
		body := string(r.Body)
		v.Body = &body
	} else {
		v.BodyRaw = r.Body
	}
	return v
}

func (v *httpView) text() []string {
	lines := []string{fmt.Sprintf("  HTTP %d", v.Status)}
	for _, name := range slices.Sorted(maps.Keys(v.Header)) {
		for _, val := range v.Header[name] {
			lines = append(lines, "  "+quoteText(name)+": "+quoteText(val))
		}
	}
	switch {
	case v.TooLarge:
		lines = append(lines, "  (body larger than the middleware's MaxStoredBody: not stored)")
	case v.Body != nil && *v.Body != "":
		lines = append(lines, "")
		for line := range strings.SplitSeq(strings.TrimRight(*v.Body, "\n"), "\n") {
			lines = append(lines, "  "+quoteText(line))
		}
	case len(v.BodyRaw) > 0:
		lines = append(lines, fmt.Sprintf("  (binary body, %d bytes; use --json for base64)", len(v.BodyRaw)))
	}
	for _, name := range slices.Sorted(maps.Keys(v.Trailer)) {
		for _, val := range v.Trailer[name] {
			lines = append(lines, "  trailer "+quoteText(name)+": "+quoteText(val))
		}
	}
	return lines
}
