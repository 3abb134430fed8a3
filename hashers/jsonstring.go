package hashers

import (
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// string decodes the string literal at c.pos and appends it to c.out as
// uvarint(len) bytes (the tag is the caller's).
func (c *canon) string() error {
	c.pos++ // opening quote
	start := c.pos
	// Fast path: no escapes. The input is valid UTF-8 (checked up front),
	// so only quotes, backslashes and control characters need a look.
	for i := start; i < len(c.data); i++ {
		switch ch := c.data[i]; {
		case ch == '"':
			c.out = binary.AppendUvarint(c.out, uint64(i-start))
			c.out = append(c.out, c.data[start:i]...)
			c.pos = i + 1
			return nil
		case ch == '\\':
			return c.escapedString(start, i)
		case ch < 0x20:
			return c.errAt(i, "control character in string")
		}
	}
	return c.errAt(len(c.data), "unexpected end of input")
}

// escapedString decodes a string from start whose first escape is at i.
func (c *canon) escapedString(start, i int) error {
	s := append(c.str[:0], c.data[start:i]...)
	for i < len(c.data) {
		ch := c.data[i]
		switch {
		case ch == '"':
			c.out = binary.AppendUvarint(c.out, uint64(len(s)))
			c.out = append(c.out, s...)
			c.str = s
			c.pos = i + 1
			return nil
		case ch < 0x20:
			return c.errAt(i, "control character in string")
		case ch != '\\':
			s = append(s, ch)
			i++
			continue
		}
		if i+1 >= len(c.data) {
			return c.errAt(len(c.data), "unexpected end of input")
		}
		switch e := c.data[i+1]; e {
		case '"', '\\', '/':
			s = append(s, e)
		case 'b':
			s = append(s, '\b')
		case 'f':
			s = append(s, '\f')
		case 'n':
			s = append(s, '\n')
		case 'r':
			s = append(s, '\r')
		case 't':
			s = append(s, '\t')
		case 'u':
			r, ok := hex4(c.data, i+2)
			if !ok {
				return c.errAt(i, "invalid \\u escape")
			}
			n := 6
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+7 < len(c.data) && c.data[i+6] == '\\' && c.data[i+7] == 'u' {
					r2, ok = hex4(c.data, i+8)
				}
				r = utf16.DecodeRune(r, r2)
				if !ok || r == utf8.RuneError {
					return c.errAt(i, "unpaired surrogate escape")
				}
				n = 12
			}
			s = utf8.AppendRune(s, r)
			i += n
			continue
		default:
			return c.errAt(i, "invalid escape")
		}
		i += 2
	}
	return c.errAt(len(c.data), "unexpected end of input")
}

// hex4 decodes the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, ch := range data[i : i+4] {
		switch {
		case '0' <= ch && ch <= '9':
			ch -= '0'
		case 'a' <= ch && ch <= 'f':
			ch -= 'a' - 10
		case 'A' <= ch && ch <= 'F':
			ch -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(ch)
	}
	return r, true
}

// invalidUTF8Offset returns the offset of the first invalid UTF-8 sequence.
func invalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
