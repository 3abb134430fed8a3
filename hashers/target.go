package hashers

import (
	"net/url"
	"slices"
	"strings"
)

// canonicalQuery returns the decoded name=value pairs of a raw query,
// sorted by name with the values of one name in their order, as
// url.ParseQuery reads the query. It returns ok false when url.ParseQuery
// would reject the query. The cost is linear in the query's length plus the
// sort.
func canonicalQuery(raw string) (pairs [][2]string, ok bool) {
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		if strings.Contains(part, ";") {
			return nil, false
		}
		name, value, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(name)
		if err != nil {
			return nil, false
		}
		value, err = url.QueryUnescape(value)
		if err != nil {
			return nil, false
		}
		pairs = append(pairs, [2]string{name, value})
	}
	slices.SortStableFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return pairs, true
}

// normalPath applies RFC 3986 §6.2.2.1 and §6.2.2.2 to an escaped path:
// the hex digits of every percent-escape upper-cased, and escapes of
// unreserved characters (ALPHA, DIGIT, "-", ".", "_", "~") decoded. Other
// escapes, "%2F" included, stay escaped, so the path's segments are kept.
// A path with a malformed escape (which net/http refuses before any
// handler runs) is left as it is.
func normalPath(p string) string {
	if !strings.Contains(p, "%") || !wellEscaped(p) {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		v := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(v) {
			b.WriteByte(v)
		} else {
			b.WriteByte('%')
			b.WriteByte(upperHex(p[i+1]))
			b.WriteByte(upperHex(p[i+2]))
		}
		i += 2
	}
	return b.String()
}

// wellEscaped reports whether every '%' in p starts a %XX escape.
func wellEscaped(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '%' {
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

func upperHex(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
