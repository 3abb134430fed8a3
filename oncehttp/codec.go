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
//	format byte | uvarint status | flags byte | uvarint #headers
//	{ string name | uvarint #values | string value… }… | body (the rest)
//
// where a string is a uvarint length and its bytes.
type responseCodec struct{}

const flagTooLarge = 1

var errNotResponse = errors.New("oncehttp: stored outcome is not an HTTP response")

// Marshal implements once.Codec for storedResponse values.
func (responseCodec) Marshal(v any) ([]byte, error) {
	s, ok := v.(storedResponse)
	if !ok {
		return nil, fmt.Errorf("oncehttp: cannot encode %T", v)
	}
	size := 1 + binary.MaxVarintLen64*2 + 1 + len(s.Body)
	for name, vals := range s.Header {
		size += binary.MaxVarintLen64*2 + len(name)
		for _, v := range vals {
			size += binary.MaxVarintLen64 + len(v)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, byte(s.Format))
	b = binary.AppendUvarint(b, uint64(s.Status))
	var flags byte
	if s.TooLarge {
		flags |= flagTooLarge
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(s.Header)))
	for name, vals := range s.Header {
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(vals)))
		for _, v := range vals {
			b = appendString(b, v)
		}
	}
	return append(b, s.Body...), nil
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
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.data)) || status > 999 {
		return errNotResponse
	}
	var h http.Header
	if n > 0 {
		h = make(http.Header, n)
	}
	for range n {
		name := d.string()
		m := d.uvarint()
		if d.err != nil || m > uint64(len(d.data)) {
			return errNotResponse
		}
		vals := make([]string, m)
		for i := range vals {
			vals[i] = d.string()
		}
		h[name] = vals
	}
	if d.err != nil {
		return errNotResponse
	}
	*s = storedResponse{
		Format: int(format), Status: int(status), Header: h,
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
