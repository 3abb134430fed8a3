package hashers

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
	"unicode/utf8"
	"unsafe"
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

// MaxDepth is the deepest nesting of arrays and objects that [JSON] and
// [Fields] accept: [[1]] is 2 deep. A deeper document is a *JSONError
// (errors.Is ErrInvalidJSON) with the Reason "nesting too deep". The parser
// recurses once per level, so the bound keeps its stack in the hundreds of
// KiB whatever the input; no request body needs more.
const MaxDepth = 1000

// member locates one encoded object member in canon.out.
type member struct {
	start, keyStart, keyEnd, end int
}

// reordered is an object whose members were not in key order: the
// tagObject at out[start], its tagEnd at out[end-1], and its members'
// starts in key order in canon.order[from:to].
type reordered struct {
	start, end, from, to int
}

// canon parses one JSON document into its canonical form.
//
// Parsing appends every value to out in input order and, for each object
// whose members are out of key order, only records that order; document
// then writes the canonical form in one pass (reorder), so every byte is
// copied once whatever the nesting. Moving each object's members into
// place when it closes would copy a deeply nested value once per
// enclosing object: quadratic in the input.
type canon struct {
	data    []byte
	pos     int
	depth   int
	out     []byte      // the value in input order, then the canonical form
	members []member    // members of the objects being parsed, innermost last
	reord   []reordered // objects whose members are out of key order
	order   []int       // member starts of those objects, in key order
	tmp     []byte      // the canonical form being written by reorder
	str     []byte      // scratch for decoding escaped strings
	copied  int         // bytes copied by reorder, counted at each copy, for tests
}

var canonPool = sync.Pool{New: func() any { return new(canon) }}

// maxPooled is the largest buffer kept in the pool; bigger ones are left
// to the garbage collector so one huge document doesn't pin memory.
const maxPooled = 64 << 10

func getCanon(data []byte) *canon {
	c := canonPool.Get().(*canon)
	c.data, c.pos, c.depth, c.copied = data, 0, 0, 0
	c.out, c.members, c.tmp, c.str = c.out[:0], c.members[:0], c.tmp[:0], c.str[:0]
	c.reord, c.order = c.reord[:0], c.order[:0]
	return c
}

func putCanon(c *canon) {
	c.data = nil
	if c.pooledBytes() > maxPooled {
		return
	}
	canonPool.Put(c)
}

// pooledBytes returns the size of the largest buffer c holds.
func (c *canon) pooledBytes() int {
	return max(cap(c.out), cap(c.tmp), cap(c.str),
		cap(c.members)*int(unsafe.Sizeof(member{})),
		cap(c.reord)*int(unsafe.Sizeof(reordered{})),
		cap(c.order)*int(unsafe.Sizeof(0)))
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
	if len(c.reord) > 0 {
		// Objects were recorded as they closed, inner ones first.
		slices.SortFunc(c.reord, func(a, b reordered) int { return a.start - b.start })
		// Reordering keeps the length.
		c.tmp, _ = c.reorder(slices.Grow(c.tmp[:0], len(c.out)), 0)
		c.out, c.tmp = c.tmp, c.out
	}
	return nil
}

// reorder appends to dst the canonical form of the value at c.out[p:],
// writing the members of every recorded object in key order, and returns
// the offset in c.out just past that value. Its recursion is as deep as
// the value's nesting, at most MaxDepth.
func (c *canon) reorder(dst []byte, p int) ([]byte, int) {
	v := c.out
	switch v[p] {
	case tagNumber, tagString:
		end := p + skip(v[p:])
		c.copied += end - p
		return append(dst, v[p:end]...), end
	case tagArray:
		dst = append(dst, tagArray)
		c.copied++
		for p++; v[p] != tagEnd; {
			dst, p = c.reorder(dst, p)
		}
		c.copied++
		return append(dst, tagEnd), p + 1
	case tagObject:
		dst = append(dst, tagObject)
		c.copied++
		if i, ok := slices.BinarySearchFunc(c.reord, p, func(o reordered, p int) int { return o.start - p }); ok {
			o := c.reord[i]
			for _, m := range c.order[o.from:o.to] {
				dst = c.appendKey(dst, m)
				dst, _ = c.reorder(dst, m+keyLen(v[m:]))
			}
			c.copied++
			return append(dst, tagEnd), o.end
		}
		for p++; v[p] != tagEnd; {
			dst = c.appendKey(dst, p)
			dst, p = c.reorder(dst, p+keyLen(v[p:]))
		}
		c.copied++
		return append(dst, tagEnd), p + 1
	default: // null, true, false
		c.copied++
		return append(dst, v[p]), p + 1
	}
}

// appendKey appends the encoded key at c.out[p:] to dst.
func (c *canon) appendKey(dst []byte, p int) []byte {
	n := keyLen(c.out[p:])
	c.copied += n
	return append(dst, c.out[p:p+n]...)
}

// keyLen returns the length of the encoded key at the start of enc:
// tagKey, the uvarint length and the key's bytes.
func keyLen(enc []byte) int {
	n, w := binary.Uvarint(enc[1:])
	return 1 + w + int(n)
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
	if c.depth > MaxDepth {
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
	objPos, objStart := c.pos, len(c.out)
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
	if err := c.sortMembers(base, objStart); err != nil {
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

// sortMembers sorts the members c.members[base:] of the object being
// closed, which starts at c.out[objStart], by key, and rejects duplicate
// keys. If they were out of order, it records their order for reorder;
// c.out is left as it is.
func (c *canon) sortMembers(base, objStart int) error {
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
	from := len(c.order)
	for _, m := range ms {
		c.order = append(c.order, m.start)
	}
	// The object's tagEnd is appended next, at len(c.out).
	c.reord = append(c.reord, reordered{start: objStart, end: len(c.out) + 1, from: from, to: len(c.order)})
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
