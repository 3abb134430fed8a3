package oncehttp

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/stagedoor/once/internal/wire"
)

// responseCodec is the once.Codec of the middleware's calls. It stores a
// storedResponse in a compact binary form: the body as raw bytes (no
// base64), so the stored size is the body plus the few allow-listed
// headers, and a replay decodes without reflection.
//
//	format byte | uvarint status | flags byte | fields (headers)
//	| fields (trailers; format 2 only) | body (the rest)
//
// where fields is a wire multimap (uvarint #fields { string name |
// uvarint #values | string value… }…, names sorted) and a string is a
// uvarint length and its bytes.
type responseCodec struct{}

const flagTooLarge = 1

var errNotResponse = errors.New("oncehttp: stored outcome is not an HTTP response")

// Marshal implements once.Codec for storedResponse values, and for
// StoredResponse values (a reconcile.Job's verdicts), which it stores as
// ResolveResponse does. Any other value (a step's, see once.Step, in a
// guarded handler) is stored as JSON.
func (responseCodec) Marshal(v any) ([]byte, error) {
	var s storedResponse
	switch v := v.(type) {
	case storedResponse:
		s = v
	case StoredResponse:
		s = toStored(v)
	default:
		return json.Marshal(v)
	}
	if s.Format != storedFormat {
		return nil, fmt.Errorf("oncehttp: cannot encode format %d", s.Format)
	}
	e := wire.NewEncoder(2 + binary.MaxVarintLen64 + len(s.Body) + wire.MultimapSize(s.Header) + wire.MultimapSize(s.Trailer))
	e.Byte(byte(s.Format))
	e.Uvarint(uint64(s.Status))
	var flags byte
	if s.TooLarge {
		flags |= flagTooLarge
	}
	e.Byte(flags)
	e.Multimap(s.Header)
	e.Multimap(s.Trailer)
	e.Raw(s.Body)
	return e.Bytes(), nil
}

// Unmarshal implements once.Codec for *storedResponse, and decodes JSON
// into any other value. The decoded body shares data's memory; it is only
// ever read.
func (responseCodec) Unmarshal(data []byte, v any) error {
	s, ok := v.(*storedResponse)
	if !ok {
		return json.Unmarshal(data, v)
	}
	d := wire.NewDecoder(data)
	format := d.Byte()
	status := d.Uvarint()
	flags := d.Byte()
	if d.Err() != nil || format != storedFormat || status > 999 {
		return errNotResponse
	}
	h := http.Header(d.Multimap())
	trailer := d.Multimap()
	if d.Err() != nil {
		return errNotResponse
	}
	*s = storedResponse{
		Format: storedFormat, Status: int(status), Header: h, Trailer: trailer,
		TooLarge: flags&flagTooLarge != 0,
	}
	if rest := d.Rest(); len(rest) > 0 {
		s.Body = rest
	}
	return nil
}
