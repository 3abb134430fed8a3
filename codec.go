package once

import "encoding/json"

// Codec encodes values and final errors for the store and decodes them on a
// replay. Implementations must be safe for concurrent use and deterministic
// enough that a decoded value is the value that was encoded. The default
// is encoding/json.
//
// A Codec with a method Lossless() declares its round trip lossless: for
// every value it encodes, decoding gives back a value equal to the
// original in every respect (unexported fields, dynamic types inside
// interfaces, invalid UTF-8 in strings). Do normally gives the first
// caller what a replay gets, the value after the codec's round trip, at
// the cost of one decode; with a lossless codec it returns fn's value as
// it is. encoding/json is not lossless.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// jsonCodec is the default Codec: encoding/json.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
