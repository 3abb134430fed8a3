// Package wire holds the primitives of the core's compact binary codecs
// (oncehttp's stored responses, oncegrpc's stored replies): unsigned
// varints, length-prefixed strings, and multimaps (http.Header,
// metadata.MD: any map[string][]string).
//
//	uvarint:  encoding/binary's unsigned varint
//	string:   uvarint length, then that many bytes, verbatim
//	multimap: uvarint #keys { string key | uvarint #values | string value… }…
//	          with the keys in sorted order, so a value has one encoding
//
// A Decoder never panics and never trusts a count: every length or count
// is checked against the bytes left before anything is allocated for it,
// so corrupt or truncated input costs at most memory proportional to its
// own length and yields ErrCorrupt.
package wire

import (
	"encoding/binary"
	"errors"
	"slices"
)

// ErrCorrupt is the Decoder's error for input that is truncated or not in
// this form. Callers usually map it to an error of their own.
var ErrCorrupt = errors.New("wire: truncated or corrupt encoding")

// StringSize is an upper bound of the encoded size of s.
func StringSize(s string) int { return binary.MaxVarintLen64 + len(s) }

// MultimapSize is an upper bound of the encoded size of m.
func MultimapSize(m map[string][]string) int {
	size := binary.MaxVarintLen64
	for k, vals := range m {
		size += binary.MaxVarintLen64 + StringSize(k)
		for _, v := range vals {
			size += StringSize(v)
		}
	}
	return size
}

// Encoder appends to a byte slice. The zero value is ready to use; Grow
// or NewEncoder avoid reallocations when the size is known.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder whose buffer has room for size bytes.
func NewEncoder(size int) *Encoder { return &Encoder{buf: make([]byte, 0, size)} }

// Bytes returns what was encoded. It shares the Encoder's buffer.
func (e *Encoder) Bytes() []byte { return e.buf }

// Byte appends c.
func (e *Encoder) Byte(c byte) { e.buf = append(e.buf, c) }

// Raw appends p as is, with no length: a form's last field, say.
func (e *Encoder) Raw(p []byte) { e.buf = append(e.buf, p...) }

// Uvarint appends v as an unsigned varint.
func (e *Encoder) Uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }

// String appends s's length and bytes.
func (e *Encoder) String(s string) {
	e.Uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// Multimap appends m with its keys sorted. A nil and an empty map encode
// alike (no key).
func (e *Encoder) Multimap(m map[string][]string) {
	e.Uvarint(uint64(len(m)))
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.String(k)
		e.Uvarint(uint64(len(m[k])))
		for _, v := range m[k] {
			e.String(v)
		}
	}
}

// Decoder reads the fields an Encoder wrote, in order. The first error
// sticks: every later read returns the zero value and Err reports it.
type Decoder struct {
	data []byte
	err  error
}

// NewDecoder returns a Decoder of data. Rest shares data's memory;
// strings are copies.
func NewDecoder(data []byte) *Decoder { return &Decoder{data: data} }

// Err is ErrCorrupt once a read failed, else nil.
func (d *Decoder) Err() error { return d.err }

// Rest returns the bytes not read yet (none after an error). It shares the
// input's memory.
func (d *Decoder) Rest() []byte {
	if d.err != nil {
		return nil
	}
	return d.data
}

func (d *Decoder) fail() {
	d.err = ErrCorrupt
	d.data = nil
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if d.err != nil || len(d.data) == 0 {
		d.fail()
		return 0
	}
	c := d.data[0]
	d.data = d.data[1:]
	return c
}

// Uvarint reads an unsigned varint; an overlong or truncated one is an
// error.
func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.data = d.data[n:]
	return v
}

// count reads a count of entries that each take at least per bytes, and
// fails if the bytes left cannot hold them.
func (d *Decoder) count(per uint64) uint64 {
	n := d.Uvarint()
	if d.err != nil || n > uint64(len(d.data))/per {
		d.fail()
		return 0
	}
	return n
}

// String reads a length-prefixed string.
func (d *Decoder) String() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	s := string(d.data[:n])
	d.data = d.data[n:]
	return s
}

// Multimap reads a multimap; nil when it has no key. A key's values are
// never nil (an empty slice when it has none).
func (d *Decoder) Multimap() map[string][]string {
	n := d.count(2) // a key takes at least its length and its #values
	if d.err != nil || n == 0 {
		return nil
	}
	m := make(map[string][]string, n)
	for range n {
		k := d.String()
		vals := make([]string, d.count(1))
		for i := range vals {
			vals[i] = d.String()
		}
		if d.err != nil {
			return nil
		}
		m[k] = vals
	}
	return m
}
