package oncehttp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
)

// responseCodec is the once.Codec of the middleware's calls. It stores a
// storedResponse in a compact binary form: the body as raw bytes (no
// base64), so the stored size is the body plus the few allow-listed
// headers, and a replay decodes without reflection.
//
//	format byte | uvarint status | flags byte | fields (headers)
//	| fields (trailers; format 2 only) | body (the rest)
//
// where fields is uvarint #fields { string name | uvarint #values |
// string value… }… and a string is a uvarint length and its bytes.
type responseCodec struct{}

const flagTooLarge = 1

var errNotResponse = errors.New("oncehttp: stored outcome is not an HTTP response")

// Marshal implements once.Codec for storedResponse values, and for
// StoredResponse values (a Reconciler's verdicts), which it stores as
// ResolveResponse does.
func (responseCodec) Marshal(v any) ([]byte, error) {
	var s storedResponse
	switch v := v.(type) {
	case storedResponse:
		s = v
	case StoredResponse:
		s = toStored(v)
	default:
		return nil, fmt.Errorf("oncehttp: cannot encode %T", v)
	}
	if s.Format != storedFormat {
		return nil, fmt.Errorf("oncehttp: cannot encode format %d", s.Format)
	}
	size := 1 + binary.MaxVarintLen64*3 + 1 + len(s.Body) + fieldsSize(s.Header) + fieldsSize(s.Trailer)
	b := make([]byte, 0, size)
	b = append(b, byte(s.Format))
	b = binary.AppendUvarint(b, uint64(s.Status))
	var flags byte
	if s.TooLarge {
		flags |= flagTooLarge
	}
	b = append(b, flags)
	b = appendFields(b, s.Header)
	b = appendFields(b, s.Trailer)
	return append(b, s.Body...), nil
}

func fieldsSize(h http.Header) int {
	size := binary.MaxVarintLen64
	for name, vals := range h {
		size += binary.MaxVarintLen64*2 + len(name)
		for _, v := range vals {
			size += binary.MaxVarintLen64 + len(v)
		}
	}
	return size
}

func appendFields(b []byte, h http.Header) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	for name, vals := range h {
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(vals)))
		for _, v := range vals {
			b = appendString(b, v)
		}
	}
	return b
}

// Unmarshal implements once.Codec for *storedResponse. The decoded body
// shares data's memory; it is only ever read.
func (responseCodec) Unmarshal(data []byte, v any) error {
	s, ok := v.(*storedResponse)
	if !ok {
		return fmt.Errorf("oncehttp: cannot decode into %T", v)
	}
	d := decoder{data: data}
	format := d.byte()
	status := d.uvarint()
	flags := d.byte()
	if d.err != nil || !readableFormat(int(format)) || status > 999 {
		return errNotResponse
	}
	h := d.fields()
	var trailer http.Header
	if format >= 2 {
		trailer = d.fields()
	}
	if d.err != nil {
		return errNotResponse
	}
	*s = storedResponse{
		Format: storedFormat, Status: int(status), Header: h, Trailer: trailer,
		TooLarge: flags&flagTooLarge != 0,
	}
	if len(d.data) > 0 {
		s.Body = d.data
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads the fields of responseCodec's form; the first error
// sticks and every later read returns zero.
type decoder struct {
	data []byte
	err  error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.data) == 0 {
		d.err = errNotResponse
		return 0
	}
	c := d.data[0]
	d.data = d.data[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.data)
	if n <= 0 {
		d.err = errNotResponse
		return 0
	}
	d.data = d.data[n:]
	return v
}

// fields reads a fields section; nil when it has no field. Every count is
// checked against the bytes left (each entry takes at least one), so a
// corrupt count cannot make it allocate more than the input's size.
func (d *decoder) fields() http.Header {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.data)) {
		d.err = errNotResponse
		return nil
	}
	var h http.Header
	if n > 0 {
		h = make(http.Header, n)
	}
	for range n {
		name := d.string()
		m := d.uvarint()
		if d.err != nil || m > uint64(len(d.data)) {
			d.err = errNotResponse
			return nil
		}
		vals := make([]string, m)
		for i := range vals {
			vals[i] = d.string()
		}
		if d.err != nil {
			return nil
		}
		h[name] = vals
	}
	return h
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.data)) {
		d.err = errNotResponse
		return ""
	}
	s := string(d.data[:n])
	d.data = d.data[n:]
	return s
}
