package hashers

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
	"unicode/utf8"
)

// The canonical form is a private binary encoding of a JSON value, built by
// one pass over the input and then hashed. Each value is self-delimiting,
// so the encoding is injective over values:
//
//	null, true, false   'n', 't', 'f'
//	number              'd' uvarint(len) text    text from appendNumber
//	string              's' uvarint(len) bytes   escapes decoded, UTF-8
//	array               'a' value* 'e'
//	object              'o' ('k' uvarint(len) key value)* 'e'
//	                    members sorted by key bytes, keys unique
//
// Two documents have the same canonical form exactly when they denote the
// same value: same types, same array orders, same key sets, same decoded
// strings, numerically equal numbers.
const (
	tagNull   = 'n'
	tagTrue   = 't'
	tagFalse  = 'f'
	tagNumber = 'd'
	tagString = 's'
	tagArray  = 'a'
	tagObject = 'o'
	tagKey    = 'k'
	tagEnd    = 'e'
)

// maxDepth bounds nesting, as encoding/json does, so that hostile input
// cannot exhaust the stack.
const maxDepth = 10000

// member locates one encoded object member in canon.out.
type member struct {
	start, keyStart, keyEnd, end int
}

// canon parses one JSON document into its canonical form.
type canon struct {
	data    []byte
	pos     int
	depth   int
	out     []byte   // canonical form
	members []member // members of the objects being parsed, innermost last
	tmp     []byte   // scratch for reordering members
	str     []byte   // scratch for decoding escaped strings
}

var canonPool = sync.Pool{New: func() any { return new(canon) }}

// maxPooled is the largest buffer kept in the pool; bigger ones are left
// to the garbage collector so one huge document doesn't pin memory.
const maxPooled = 64 << 10

func getCanon(data []byte) *canon {
	c := canonPool.Get().(*canon)
	c.data, c.pos, c.depth = data, 0, 0
	c.out, c.members, c.tmp, c.str = c.out[:0], c.members[:0], c.tmp[:0], c.str[:0]
	return c
}

func putCanon(c *canon) {
	c.data = nil
	if cap(c.out) > maxPooled || cap(c.tmp) > maxPooled || cap(c.str) > maxPooled || cap(c.members) > maxPooled/32 {
		return
	}
	canonPool.Put(c)
}

// document canonicalises c.data, which must hold exactly one value.
func (c *canon) document() error {
	if !utf8.Valid(c.data) {
		return c.errAt(invalidUTF8Offset(c.data), "invalid UTF-8")
	}
	c.skipSpace()
	if err := c.value(); err != nil {
		return err
	}
	c.skipSpace()
	if c.pos != len(c.data) {
		return c.errAt(c.pos, "data after the top-level value")
	}
	return nil
}

func (c *canon) errAt(pos int, reason string) error {
	return &JSONError{Offset: int64(pos), Reason: reason}
}

func (c *canon) unexpected() error {
	if c.pos >= len(c.data) {
		return c.errAt(c.pos, "unexpected end of input")
	}
	return c.errAt(c.pos, "unexpected character")
}

func (c *canon) skipSpace() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canon) value() error {
	if c.pos >= len(c.data) {
		return c.unexpected()
	}
	switch ch := c.data[c.pos]; {
	case ch == '{':
		return c.object()
	case ch == '[':
		return c.array()
	case ch == '"':
		c.out = append(c.out, tagString)
		return c.string()
	case ch == 't':
		return c.literal("true", tagTrue)
	case ch == 'f':
		return c.literal("false", tagFalse)
	case ch == 'n':
		return c.literal("null", tagNull)
	case ch == '-' || ('0' <= ch && ch <= '9'):
		return c.number()
	default:
		return c.unexpected()
	}
}

func (c *canon) literal(lit string, tag byte) error {
	if !bytes.HasPrefix(c.data[c.pos:], []byte(lit)) {
		return c.errAt(c.pos, "invalid literal")
	}
	c.pos += len(lit)
	c.out = append(c.out, tag)
	return nil
}

func (c *canon) enter() error {
	c.depth++
	if c.depth > maxDepth {
		return c.errAt(c.pos, "nesting too deep")
	}
	return nil
}

func (c *canon) array() error {
	if err := c.enter(); err != nil {
		return err
	}
	c.pos++ // '['
	c.out = append(c.out, tagArray)
	c.skipSpace()
	if c.pos < len(c.data) && c.data[c.pos] == ']' {
		c.pos++
	} else {
		for {
			if err := c.value(); err != nil {
				return err
			}
			done, err := c.separator(']')
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	c.out = append(c.out, tagEnd)
	c.depth--
	return nil
}

func (c *canon) object() error {
	if err := c.enter(); err != nil {
		return err
	}
	objPos := c.pos
	c.pos++ // '{'
	c.out = append(c.out, tagObject)
	base := len(c.members)
	c.skipSpace()
	if c.pos < len(c.data) && c.data[c.pos] == '}' {
		c.pos++
	} else {
		for {
			if c.pos >= len(c.data) || c.data[c.pos] != '"' {
				return c.unexpected()
			}
			m := member{start: len(c.out)}
			c.out = append(c.out, tagKey)
			if err := c.string(); err != nil {
				return err
			}
			m.keyEnd = len(c.out)
			m.keyStart = m.keyEnd - int(lengthBefore(c.out[m.start+1:m.keyEnd]))
			c.skipSpace()
			if c.pos >= len(c.data) || c.data[c.pos] != ':' {
				return c.unexpected()
			}
			c.pos++
			c.skipSpace()
			if err := c.value(); err != nil {
				return err
			}
			m.end = len(c.out)
			c.members = append(c.members, m)
			done, err := c.separator('}')
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	if err := c.sortMembers(base); err != nil {
		// Report the object, not a member: the key is not echoed.
		return c.errAt(objPos, err.Error())
	}
	c.members = c.members[:base]
	c.out = append(c.out, tagEnd)
	c.depth--
	return nil
}

// lengthBefore returns the length of the string whose uvarint-prefixed
// encoding is enc.
func lengthBefore(enc []byte) uint64 {
	n, _ := binary.Uvarint(enc)
	return n
}

type dupKeyError struct{}

func (dupKeyError) Error() string { return "duplicate object key" }

// sortMembers reorders the members c.members[base:] of the object being
// closed by key, in place in c.out, and rejects duplicate keys.
func (c *canon) sortMembers(base int) error {
	ms := c.members[base:]
	if len(ms) < 2 {
		return nil
	}
	key := func(m member) []byte { return c.out[m.keyStart:m.keyEnd] }
	sorted := true
	for i := 1; i < len(ms); i++ {
		if bytes.Compare(key(ms[i-1]), key(ms[i])) >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil // already canonical and, being strictly increasing, unique
	}
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(key(a), key(b)) })
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(key(ms[i-1]), key(ms[i])) {
			return dupKeyError{}
		}
	}
	start := ms[0].start
	for _, m := range ms {
		start = min(start, m.start)
	}
	c.tmp = c.tmp[:0]
	for _, m := range ms {
		c.tmp = append(c.tmp, c.out[m.start:m.end]...)
	}
	copy(c.out[start:], c.tmp)
	return nil
}

// separator consumes what follows an array element or object member: the
// closing byte (done) or a comma and the space after it.
func (c *canon) separator(closing byte) (done bool, err error) {
	c.skipSpace()
	switch {
	case c.pos >= len(c.data):
		return false, c.unexpected()
	case c.data[c.pos] == closing:
		c.pos++
		return true, nil
	case c.data[c.pos] != ',':
		return false, c.unexpected()
	}
	c.pos++
	c.skipSpace()
	return false, nil
}
